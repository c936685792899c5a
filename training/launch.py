"""Where a training run runs (`compute.backend`): in this process (CPU or one GPU), under
`accelerate launch` with a DeepSpeed config (several GPUs), or on Modal. `plan` says exactly what
a launch would do without doing it (`skillos train --dry-run`); `launch` does it. The gates run
once, in the process that launches; the launched workers run `python -m skillos.training.launch
CONFIG`, which trains without running them again.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from skillos.config import Config
from skillos.errors import SkillosError

MODAL_APP = "skillos-train"
MODAL_VOLUME = "skillos-checkpoints"
MODAL_MOUNT = "/root/skillos"
MODAL_CHECKPOINTS = "/checkpoints"


def worker_command(config_path: str) -> list[str]:
    return [sys.executable, "-m", "skillos.training.launch", config_path]


def plan(cfg: Config, config_path: str) -> dict:
    """The launch `cfg` would make, as data: printed by --dry-run, run by launch()."""
    c = cfg.compute
    if c.backend == "local":
        return {"backend": "local", "where": "this process", "command": worker_command(config_path)}
    if c.backend == "accelerate":
        command = ["accelerate", "launch", "--num_processes", str(c.num_processes)]
        if c.deepspeed_config:
            command += ["--use_deepspeed", "--deepspeed_config_file", str(_relative(cfg, c.deepspeed_config))]
        return {"backend": "accelerate", "where": f"{c.num_processes} processes on this machine",
                "command": command + ["-m", "skillos.training.launch", config_path]}
    gpu = c.gpu or "H100:8"
    remote_config = f"{MODAL_MOUNT}/{Path(config_path).name}"
    inner = ["accelerate", "launch", "--num_processes", gpu.split(":")[-1] if ":" in gpu else "1"]
    if c.deepspeed_config:
        inner += ["--use_deepspeed", "--deepspeed_config_file",
                  f"{MODAL_MOUNT}/{Path(c.deepspeed_config).name}"]
    return {"backend": "modal", "app": MODAL_APP, "gpu": gpu,
            "image": "debian_slim(python 3.11) + pip install '.[train,alfworld]' vllm",
            "mounts": {MODAL_MOUNT: "this checkout and the config"},
            "volume": {MODAL_CHECKPOINTS: MODAL_VOLUME},
            "output_dir": f"{MODAL_CHECKPOINTS}/{Path(cfg.training.output_dir or cfg.experiment.name).name}",
            "timeout_hours": 24,
            "command": inner + ["-m", "skillos.training.launch", remote_config]}


def render(p: dict) -> str:
    lines = [f"launch: {p['backend']}"]
    for key, value in p.items():
        if key in ("backend", "command"):
            continue
        lines.append(f"  {key}: {value}")
    lines.append(f"  command: {shlex.join(p['command'])}")
    return "\n".join(lines)


def launch_modal(p: dict, config_path: str) -> None:
    try:
        import modal  # noqa: F401
    except ImportError as exc:
        raise SkillosError("compute.backend modal needs the modal package and a token "
                           "(pip install modal && modal token new); --dry-run shows the launch") from exc
    raise SkillosError("compute.backend modal: launching is not built in this version; run the --dry-run "
                       "plan's command in a Modal function by hand")


def _relative(cfg: Config, path: str) -> Path:
    p = Path(path)
    if not p.is_absolute() and cfg.source is not None:
        p = Path(cfg.source).parent / p
    return p


def main(argv: list[str]) -> int:
    """A launched worker: train the config (the launching process ran the gates)."""
    from skillos import config as cfgmod
    from skillos.ledger import Ledger
    from skillos.training.trainer import train

    cfg = cfgmod.load(argv[0])
    with Ledger() as ledger:
        train(cfg, ledger)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
