"""`skillos doctor`: is this machine ready for the agent and the person? Each check says what it
saw and, when something is missing or broken, the one thing to do about it.

Status: ok; missing (an optional part is not installed: only what needs it is affected); fail
(something the named config or every command needs is broken). Exit 1 on a fail.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from skillos.registry import BACKENDS, NO_MODEL, RAY_INSTALL, RAY_MODULES, uses_model
from skillos.errors import SkillosError
from skillos.evals.backends.chat import api_key
from skillos.evals.envs.alfworld import engine, scenes
from skillos.ledger import Ledger
from skillos.ledger.store import default_path
from skillos.registry import DEFAULT_LOCAL, key_env, load

MIN_FREE_GB = 10.0
def extras() -> list:
    """(module, the line that installs it, what needs it); each backend's from its registry entry,
    read at each call (a backend a plug-in adds is listed too)."""
    return [
        ("alfworld", "pip install 'skillos[alfworld]'", "the ALFWorld engine: quickstart, eval, sweep, train, optimize"),
        *((module, b.install, f"backend {b.name}") for b in BACKENDS if b.extra for module in b.modules),
        ("trl", "pip install 'skillos[train]'", "skillos train (GRPOTrainer, with torch, transformers and peft)"),
        ("matplotlib", "pip install 'skillos[plot]'", "sweep.png"),
        ("modal", "pip install 'skillos[modal]'", "compute.backend modal"),
        *((module, RAY_INSTALL, "compute.backend ray") for module in RAY_MODULES),
        ("math_verify", "pip install 'skillos[reasoning]'", "env.name reasoning: the math-verify grader"),
    ]


@dataclass
class Check:
    name: str
    status: str  # ok | missing | fail
    detail: str
    fix: str = ""

    def line(self) -> str:
        fix = f" · fix: {self.fix}" if self.fix and self.status != "ok" else ""
        return f"{self.status.upper():7} {self.name}: {self.detail}{fix}"

    def to_dict(self) -> dict:
        return asdict(self)


def run(cfg=None) -> list[Check]:
    checks = [_python()]
    checks += [_extra(*row) for row in extras()]
    checks += [_engine(), _ledger(), _disk(), _gpu(), _npx()]
    if cfg is not None:
        for role in ("executor", "curator", "judge"):
            section = getattr(cfg, role)
            if uses_model(section.backend):
                checks.append(_backend(role, section))
        if cfg.optimize.optimizer.backend != NO_MODEL:
            checks.append(_backend("optimize.optimizer", cfg.optimize.optimizer))
    return checks


def _python() -> Check:
    v = sys.version_info
    ok = v >= (3, 10)
    return Check("python", "ok" if ok else "fail", f"{v.major}.{v.minor}.{v.micro}", "use Python 3.10 or newer")


def _extra(module: str, install: str, needed_by: str) -> Check:
    found = importlib.util.find_spec(module) is not None
    return Check(f"package {module}", "ok" if found else "missing",
                 "installed" if found else f"not installed; needed by {needed_by}", install)


def _engine() -> Check:
    if importlib.util.find_spec("alfworld") is None:
        return Check("alfworld engine", "missing", "the [alfworld] extra is not installed",
                     "pip install '.[alfworld]' (compiles the planner once, ~3 min)")

    try:
        scenes.alfworld_root()
    except SkillosError as exc:
        return Check("alfworld engine", "fail", str(exc), "reinstall: pip install --force-reinstall 'alfworld==0.4.2'")
    cache = engine.cache_root()
    games = sum(1 for _ in cache.glob("*/*/*/game.tw-pddl")) if cache.is_dir() else 0
    return Check("alfworld engine", "ok", f"engine data found; {games} generated games cached in {cache}",
                 "skillos quickstart generates and caches games on first run")


def _ledger() -> Check:
    path = default_path()
    try:
        with Ledger(path) as ledger:
            ledger.db.execute("BEGIN IMMEDIATE")  # takes the write lock: writable now, not just readable
            ledger.db.execute("ROLLBACK")
    except Exception as exc:  # sqlite3, OS and ledger errors alike mean: not writable here
        return Check("ledger", "fail", f"{path}: {str(exc).splitlines()[0]}",
                     "set SKILLOS_HOME to a writable folder")
    return Check("ledger", "ok", f"{path} writable")


def _disk() -> Check:
    free = shutil.disk_usage(Path.cwd()).free / 1e9
    ok = free >= MIN_FREE_GB
    return Check("disk", "ok" if ok else "fail", f"{free:.1f} GB free in {Path.cwd()}",
                 f"free at least {MIN_FREE_GB:g} GB (checkpoints, game cache)")


def _gpu() -> Check:
    if importlib.util.find_spec("torch") is not None:
        import torch

        if torch.cuda.is_available():
            names = {torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())}
            return Check("gpu", "ok", f"{torch.cuda.device_count()} visible: {', '.join(sorted(names))}")
    elif shutil.which("nvidia-smi"):
        return Check("gpu", "ok", "nvidia-smi present (torch not installed to confirm)")
    return Check("gpu", "missing", "no GPU visible: CPU runs only (quickstart, eval, the CPU smoke train)",
                 "backend vllm, vLLM colocate and multi-GPU training need a GPU machine")


def _npx() -> Check:
    if not shutil.which("npx") or not shutil.which("node"):
        return Check("npx", "missing", "node/npx not found: agents cannot install the skills/ bundles here",
                     "install Node.js 20+, then: npx skills add OWNER/REPO --skill '*' -a claude-code")
    version = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    return Check("npx", "ok", f"node {version}; on Node < 22.20 use skills@1.5.26")


def _backend(role: str, section) -> Check:
    """Keys present and the endpoint answering, through the same SDKs the runs use."""
    name = f"{role} backend {section.backend}"
    if BACKENDS[section.backend].local:
        return _local_model(name, section)

    try:
        key = api_key(section)
    except SkillosError:
        env = key_env(section)
        if not env:
            return Check(name, "fail", f"backend {section.backend} names no variable to read its API key from",
                         f"set {role}.api_key_env (keys come from the environment only)")
        return Check(name, "fail", f"no API key in ${env}", f"export {env}=... (keys come from the environment only)")
    where = section.base_url or "the provider's default endpoint"
    if BACKENDS[section.backend].client is None:
        return Check(name, "missing", f"key present; {where} not probed: backend {section.backend} names no client "
                     "to list models with", "give its BACKENDS entry (skillos/registry.py) a client")
    try:
        client = load(BACKENDS[section.backend].client)(api_key=key, base_url=section.base_url, timeout=10,
                                                        max_retries=0)
        models = [m.id for m in client.models.list()]
    except ImportError:
        return Check(name, "fail", f"the {section.backend} SDK is not installed",
                     f"pip install '.[{BACKENDS[section.backend].extra}]'")
    except Exception as exc:  # the SDKs raise their own connection / status / auth errors
        return Check(name, "fail", f"{where} did not answer: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}",
                     "check base_url, the key and the server (for vllm serve: is it up?)")
    listed = section.model in models if models else None
    detail = f"{where} answers; {len(models)} models listed"
    if listed is False:
        return Check(name, "fail", f"{detail}, {section.model!r} not among them", "fix executor/curator/judge.model")
    return Check(name, "ok", detail + (f", {section.model!r} among them" if listed else ""))


def _local_model(name: str, section) -> Check:
    entry = BACKENDS[section.backend]
    if entry.gpu_only and any(importlib.util.find_spec(m) is None for m in entry.modules):
        return Check(name, "fail", f"{entry.name} is not installed",
                     f"use a GPU machine with {entry.name} installed, or backend {DEFAULT_LOCAL}")
    try:
        from skillos.evals.backends.tiny_model import TINY_NAME, resolve

        path = TINY_NAME if section.model == TINY_NAME else resolve(section.model)  # the tiny model builds on use
    except SkillosError as exc:
        return Check(name, "fail", str(exc), "fetch a named model (`skillos models list`), or point model at a "
                     "weights folder or an org/name in the hub cache")
    return Check(name, "ok", f"weights at {path}")
