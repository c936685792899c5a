"""Checkpoints as adapters: a sweep over LoRA checkpoints served by one vLLM server.

With `sweep.serve: adapters`, `skillos sweep` starts one `vllm serve BASE --enable-lora` with
every checkpoint as an adapter named after its arm (`--lora-modules NAME=PATH`), and each
`curator:NAME` arm's curator is the openai backend at that server asking for model NAME: one
base model in GPU memory instead of one model per arm process, and every arm's requests batched
together by the server. Only LoRA checkpoints qualify: a full-weight checkpoint, a folder with
no adapter_config.json, checkpoints on different bases, or a `sweep.max_loras` below the arm
count (concurrent arms would evict each other's adapters) are one-line errors before anything
starts. vLLM is GPU-only and imported by nobody here: the server is a subprocess, and `--dry-run`
prints the plan without it.

The expected wall time is the step plan's arithmetic (training/common/plan.py) applied to the sweep:
every game played to env max_steps actions (an upper bound), one curator request per train game
of a curator arm, each request at compute.executor_latency_s (or the plan's assumed latency,
printed as assumed), with eval.concurrency games in flight in each of the arms running at once
(Little's law: wall = requests x latency / requests in flight). The server's own start (loading
the base) is not in it.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from pathlib import Path

from skillos.config.derived import ADAPTER_KEY_ENV
from skillos.errors import SkillosError
from skillos.config.derived import checkpoint_of
from skillos.evals.arms import learns
from skillos.evals.envs.registry import environment
from skillos.safety import read_json_file
from skillos.secrets import protect_key_vars
from skillos.training.common.plan import ASSUMED_LATENCY_S, duration_text

HOST = "127.0.0.1"
VLLM_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)  # the --max-lora-rank values vLLM accepts


def checkpoint_arms(cfg) -> dict:
    """curator:NAME arm name -> its checkpoint folder (resolved beside the config)."""
    return {arm[8:]: checkpoint_of(cfg, arm) for arm in cfg.eval.arms if arm.startswith("curator:")}


def _adapter(name: str, folder: str) -> dict:
    path = Path(folder)
    config = path / "adapter_config.json"
    if not config.is_file():
        if (path / "config.json").is_file():
            raise SkillosError(f"--checkpoint {folder}: full weights (config.json, no adapter_config.json); "
                               "sweep.serve: adapters serves LoRA checkpoints only (train with training.lora), "
                               "or set sweep.serve: local")
        raise SkillosError(f"--checkpoint {folder}: no adapter_config.json; sweep.serve: adapters serves LoRA "
                           "checkpoints only")
    data = read_json_file(config, "adapter config", 1 << 20)
    base, rank = data.get("base_model_name_or_path"), data.get("r")
    if not isinstance(rank, int) or rank < 1:
        raise SkillosError(f"--checkpoint {folder}: adapter_config.json has no LoRA rank r (got {rank!r})")
    return {"name": name, "path": str(path.resolve()), "base_model": base, "rank": rank}


def plan(cfg) -> dict | None:
    """The adapter server of a sweep config (None: `sweep.serve: local`), gated."""
    s = cfg.sweep
    if s.serve != "adapters":
        return None
    arms = checkpoint_arms(cfg)
    if not arms:
        raise SkillosError("sweep.serve: adapters needs at least one --checkpoint (a curator:NAME arm)")
    adapters = [_adapter(name, folder) for name, folder in arms.items()]
    bases = sorted({str(a["base_model"]) for a in adapters if a["base_model"]})
    base = s.base_model
    if base is None:
        if len(bases) != 1:
            raise SkillosError(f"sweep.serve: adapters: the checkpoints name {len(bases)} base models "
                               f"({', '.join(bases) or 'none'}); one server serves one base: set sweep.base_model")
        base = bases[0]
    max_loras = s.max_loras if s.max_loras is not None else len(adapters)
    if max_loras < len(adapters):
        raise SkillosError(f"sweep.max_loras: {max_loras} is smaller than the {len(adapters)} checkpoint arms; every "
                           "arm's adapter must stay resident while the arms run at once: raise it, or sweep fewer")
    needed = max(a["rank"] for a in adapters)
    rank = s.max_lora_rank if s.max_lora_rank is not None else next((r for r in VLLM_RANKS if r >= needed), needed)
    if rank < needed:
        raise SkillosError(f"sweep.max_lora_rank: {rank} is below the largest checkpoint rank r={needed}")
    command = ["vllm", "serve", base, "--enable-lora", "--max-loras", str(max_loras), "--max-lora-rank", str(rank),
               "--host", HOST, "--port", str(s.port), "--api-key", f"${ADAPTER_KEY_ENV}", "--lora-modules",
               *[f"{a['name']}={a['path']}" for a in adapters]]
    return {"base_model": base, "adapters": adapters, "max_loras": max_loras, "max_lora_rank": rank,
            "base_url": f"http://{HOST}:{s.port}/v1", "command": command, "wall": expected_wall(cfg)}


def expected_wall(cfg) -> dict:
    """The sweep's wall time by Little's law (see the module docstring); every term is returned."""

    latency = cfg.compute.executor_latency_s
    actions = environment(cfg).turns(cfg)
    arms = list(cfg.eval.arms)
    games = {arm: cfg.env.n_games + (cfg.env.n_train_games if learns(arm) else 0) for arm in arms}
    curator_calls = sum(cfg.env.n_train_games for arm in arms if arm.startswith("curator:"))
    requests = sum(games.values()) * actions + curator_calls
    workers = cfg.eval.workers or os.cpu_count() or 1
    in_flight = min(len(arms), workers) * cfg.eval.concurrency
    seconds_each = latency if latency is not None else ASSUMED_LATENCY_S
    return {"requests": requests, "games": sum(games.values()), "max_actions": actions,
            "curator_requests": curator_calls, "latency_s": seconds_each, "latency_stated": latency is not None,
            "in_flight": in_flight, "seconds": requests * seconds_each / in_flight}


def lines(served: dict) -> list[str]:
    """The plan as `sweep --dry-run` prints it."""
    out = [f"adapter server: {shlex.join(served['command'])}",
           f"  base {served['base_model']}, {len(served['adapters'])} adapters (max-loras {served['max_loras']}, "
           f"max-lora-rank {served['max_lora_rank']}), at {served['base_url']}:"]
    out += [f"  curator:{a['name']} -> model {a['name']} = {a['path']} (r={a['rank']})" for a in served["adapters"]]
    return out + [wall_line(served["wall"]) + " (the server's start not included)"]


def wall_line(w: dict) -> str:
    latency = f"{w['latency_s']:g} s per request " + ("(compute.executor_latency_s)" if w["latency_stated"] else
                                                      "(assumed: set compute.executor_latency_s)")
    return (f"  expected wall time <= {duration_text(w['seconds'])}: {w['games']} games x <= {w['max_actions']} actions "
            f"+ {w['curator_requests']} curator requests = {w['requests']} requests at {latency}, "
            f"{w['in_flight']} in flight (Little's law)")


@contextlib.contextmanager
def serving(served: dict, echo, start_timeout_s: float = 1800.0):
    """The adapter server running while the sweep's arms play: started with a fresh key (in
    $SKILLOS_ADAPTER_SERVER_KEY for the arms' curators, redacted from output), ready when its
    /v1/models lists every adapter, stopped after. Needs vLLM (a GPU machine)."""
    import importlib.util
    import json
    import secrets
    import subprocess
    import time
    import urllib.request

    if importlib.util.find_spec("vllm") is None:
        raise SkillosError("sweep.serve: adapters needs vLLM, on a GPU machine (pip install vllm); "
                           "`skillos sweep --dry-run` prints the plan without it")
    token = secrets.token_hex(16)
    os.environ[ADAPTER_KEY_ENV] = token
    protect_key_vars([ADAPTER_KEY_ENV])
    command = [token if part == f"${ADAPTER_KEY_ENV}" else part for part in served["command"]]
    echo(f"starting the adapter server: {shlex.join(served['command'])}")
    process = subprocess.Popen(command)
    try:
        wanted, deadline = {a["name"] for a in served["adapters"]}, time.monotonic() + start_timeout_s
        request = urllib.request.Request(served["base_url"] + "/models", headers={"Authorization": f"Bearer {token}"})
        while True:
            if process.poll() is not None:
                raise SkillosError(f"the adapter server exited with code {process.returncode} before it was ready "
                                   "(its log is above)")
            try:
                with urllib.request.urlopen(request, timeout=5) as answer:
                    if wanted <= {m.get("id") for m in json.load(answer).get("data", [])}:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SkillosError(f"the adapter server was not ready after {start_timeout_s:.0f} s")
            time.sleep(2)
        echo(f"adapter server ready: {len(wanted)} adapters at {served['base_url']}")
        yield
    finally:
        process.terminate()
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
