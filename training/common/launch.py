"""Where a training run runs (`compute.backend`): in this process (CPU or one GPU), under
`accelerate launch` with a DeepSpeed config (several GPUs), or on Modal. `plan` says exactly what
a launch would do without doing it (`skillos train --dry-run`); `launch` does it. The gates run
once, in the process that launches; the launched workers run `python -m skillos.training.common.launch
CONFIG`, which trains without running them again.
"""

from __future__ import annotations

import sys
from pathlib import Path

from skillos.config.derived import relative_to_config, training_output_dir
from skillos.config.schema import Config
from skillos.errors import SkillosError
from skillos.config.derived import server_gpus
from skillos.config.loading import load
from skillos.devices import gpu_spec, gpus_per_machine
from skillos.ledger import Ledger
from skillos.ledger.watchdog import launch_watch, watching
from skillos.registry import COMPUTE, TRAINING_BACKENDS, compute_of
from skillos.training import registry
from skillos.training.common.memory import memory_plan
from skillos.training.common.plan import server_commands, step_plan, vllm_server_command
from skillos.training.registry import train

MODAL_APP = "skillos-train"
MODAL_VOLUME = "skillos-checkpoints"
MODAL_CODE = "/root/skillos"
MODAL_CONFIG = "/root/config"
MODAL_CHECKPOINTS = "/checkpoints"  # the Volume, and the working folder of the run
MODAL_TIMEOUT_HOURS = 24


def worker_command(config_path: str) -> list[str]:
    return [sys.executable, "-m", "skillos.training.common.launch", config_path]


def plan(cfg: Config, config_path: str) -> dict:
    """The launch `cfg` would make, as data: printed by --dry-run, run by launch(); with the
    step plan (training/common/plan.py) a person reads before paying, and the watchdog (gate 7) started
    beside it on this path (`watchdog`: None when compute.watchdog is off)."""

    compute = _training_compute(cfg)
    p = {"backend": compute.name, **compute.launch_functions()[0](cfg, config_path)}
    out = p.get("output_dir") or str(training_output_dir(cfg))
    p["watchdog"] = launch_watch(cfg, [out], compute.watched, training=True)
    memory = memory_plan(cfg) if gpu_spec(cfg) else None  # what each GPU will hold (gate 7's memory row's plan)
    p["step_plan"] = step_plan(cfg, memory).to_dict()
    if memory is not None:
        p["memory_plan"] = memory.to_dict()
    return p


def _training_compute(cfg: Config):
    """The compute backend's registry entry (skillos/registry.py COMPUTE), refused when it takes no
    training launch (ray: evals and sweeps, whose arms are independent tasks)."""
    compute = compute_of(cfg)
    if not compute.trains:
        raise SkillosError(f"compute.backend {compute.name}: runs eval, sweep and matrix arms as tasks; training "
                           f"launches on {', '.join(TRAINING_BACKENDS)} (set compute.backend, or --backend)")
    return compute


# One plan and one run function per compute backend that trains, named by its registry entry.
def plan_local(cfg: Config, config_path: str) -> dict:
    return {"where": "this process", "command": worker_command(config_path)}


def plan_accelerate(cfg: Config, config_path: str) -> dict:
    c = cfg.compute
    command = ["accelerate", "launch", "--num_processes", str(c.num_processes)]
    where = f"{c.num_processes} processes on this machine"
    if c.num_machines > 1:  # the same command on every machine, each with its own rank
        command += ["--num_machines", str(c.num_machines), "--machine_rank", str(c.machine_rank),
                    "--main_process_ip", str(c.main_process_ip), "--main_process_port", str(c.main_process_port)]
        where = (f"{c.num_processes} processes on {c.num_machines} machines ({c.num_processes // c.num_machines} "
                 f"each); this is machine rank {c.machine_rank}, main {c.main_process_ip}:{c.main_process_port}")
    if c.deepspeed_config:
        command += ["--use_deepspeed", "--deepspeed_config_file", str(relative_to_config(cfg, c.deepspeed_config))]
    out = {"where": where}
    server = vllm_server_command(cfg)
    if server:  # started first, by hand, on the main machine's first GPUs; training uses the rest
        out["vllm_server"] = f"start first on the main machine: {' '.join(server)}"
    for role, serve in server_commands(cfg).items():
        out[f"{role}_server"] = f"start first on the main machine: {' '.join(serve)}"
    if server_gpus(cfg):
        per_machine = c.num_processes // c.num_machines
        command += ["--gpu_ids", ",".join(str(server_gpus(cfg) + i) for i in range(per_machine))]
    return {**out, "command": command + ["-m", "skillos.training.common.launch", config_path]}


def plan_modal(cfg: Config, config_path: str) -> dict:
    c = cfg.compute
    gpu = gpu_spec(cfg)
    inner = ["accelerate", "launch", "--num_processes", str(gpus_per_machine(cfg))]
    files = {f"{MODAL_CONFIG}/{Path(config_path).name}": str(Path(config_path).resolve())}
    if c.deepspeed_config:
        local = relative_to_config(cfg, c.deepspeed_config)
        files[f"{MODAL_CONFIG}/{local.name}"] = str(local.resolve())
        inner += ["--use_deepspeed", "--deepspeed_config_file", f"{MODAL_CONFIG}/{local.name}"]
    out = str(training_output_dir(cfg))
    return {"app": MODAL_APP, "gpu": gpu,
            "image": "debian_slim python 3.11 + gcc/g++/make/cmake + pip install '.[train,alfworld]' vllm",
            "code": f"{_repo_root()} -> {MODAL_CODE}", "files": files,
            "volume": {MODAL_CHECKPOINTS: MODAL_VOLUME},
            "output_dir": f"{MODAL_CHECKPOINTS}/{out}" if not Path(out).is_absolute() else out,
            "ledger": f"{MODAL_CHECKPOINTS}/.skillos/ledger.db (on the volume)",
            "timeout_hours": MODAL_TIMEOUT_HOURS,
            "command": inner + ["-m", "skillos.training.common.launch", f"{MODAL_CONFIG}/{Path(config_path).name}"]}


def launch(cfg: Config, p: dict, ledger, echo) -> dict:
    """Run the plan `p` (the gates have passed): train in this process under the watchdog, or
    hand the launch to `accelerate launch` or Modal. Returns the summary: `returncode` (0 when
    training finished), and for a local run the trained steps and archived checkpoints."""
    return {"backend": p["backend"], **COMPUTE[p["backend"]].launch_functions()[1](cfg, p, ledger, echo)}


def run_local(cfg: Config, p: dict, ledger, echo) -> dict:
    import contextlib
    import os

    with _watched(p, os.getpid(), ledger.path, echo), contextlib.redirect_stdout(sys.stderr):  # stdout: the report's
        summary = registry.train(cfg, ledger, echo=echo)  # skillgate.trainer picks the trainer
    return {"returncode": 0, **summary}


def run_accelerate(cfg: Config, p: dict, ledger, echo) -> dict:
    import subprocess

    job = subprocess.Popen(p["command"])
    with _watched(p, job.pid, ledger.path, echo):
        return {"returncode": job.wait(), "steps": [], "checkpoints": []}


def run_modal(cfg: Config, p: dict, ledger, echo) -> dict:  # its watchdog starts in the container (_run_in_container)
    return {"returncode": launch_modal(p), "steps": [], "checkpoints": []}


def _watched(p: dict, pid: int, ledger_path, echo):
    """The plan's watchdog (gate 7) as a process of its own on `pid`, or nothing when it is off."""
    import contextlib

    w = p.get("watchdog")
    if not w:
        return contextlib.nullcontext()
    return watching(w["paths"], ledger_path, w["stall_minutes"], gpus=w["gpus"], echo=echo, pids=[pid],
                    stop_on=w.get("stop_on"), after_minutes=w.get("after_minutes", 0.0))


def launch_modal(p: dict) -> int:
    """Run the plan on Modal: an image with this checkout installed, the config (and its DeepSpeed
    file) copied in, the checkpoint Volume mounted as the working folder, so output_dir and the
    run's ledger persist after the container is gone."""
    try:
        import modal
    except ImportError as exc:
        raise SkillosError("compute.backend modal needs the modal package and a token "
                           "(pip install modal && modal token new); --dry-run shows the launch") from exc
    if not (_repo_root() / "pyproject.toml").is_file():
        raise SkillosError("compute.backend modal ships this source checkout to the container: run "
                           "skillos from a checkout (pip install -e .)")
    image = (modal.Image.debian_slim(python_version="3.11").apt_install("gcc", "g++", "make", "cmake")
             .add_local_dir(_repo_root(), remote_path=MODAL_CODE, copy=True,
                            ignore=[".git", "runs", "checkpoints", ".skillos", "**/__pycache__"])
             .run_commands(f"pip install '{MODAL_CODE}[train,alfworld]' vllm"))
    for remote, local in p["files"].items():
        image = image.add_local_file(local, remote_path=remote, copy=True)
    volume = modal.Volume.from_name(MODAL_VOLUME, create_if_missing=True)
    app = modal.App(MODAL_APP, image=image)
    remote = app.function(gpu=p["gpu"], volumes={MODAL_CHECKPOINTS: volume}, serialized=True,
                          timeout=MODAL_TIMEOUT_HOURS * 3600)(_run_in_container)
    try:
        with modal.enable_output(), app.run():
            return remote.remote(p["command"], p.get("watchdog"))
    except modal.exception.AuthError as exc:
        raise SkillosError(f"modal: {str(exc).splitlines()[0]} (modal token new)") from exc


def _run_in_container(command: list, watch: dict | None = None) -> int:
    """The job in the container, and beside it the watchdog the plan names (gate 7: the box the job
    runs on, its alarms in the volume's ledger)."""
    import os
    import subprocess

    env = {**os.environ, "SKILLOS_HOME": f"{MODAL_CHECKPOINTS}/.skillos"}
    job = subprocess.Popen(command, cwd=MODAL_CHECKPOINTS, env=env)
    if not watch:
        return job.wait()

    with watching(watch["paths"], f"{MODAL_CHECKPOINTS}/.skillos/ledger.db", watch["stall_minutes"],
                  gpus=watch["gpus"], pids=[job.pid], stop_on=watch.get("stop_on")):
        return job.wait()


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def main(argv: list[str]) -> int:
    """A launched worker: train the config (the launching process ran the gates)."""

    cfg = load(argv[0])
    with Ledger() as ledger:
        train(cfg, ledger)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
