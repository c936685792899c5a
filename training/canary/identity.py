"""What a canary ran, as one hash: the certificate gate 6 reads.

A canary's identity is computed from what actually ran, never from a list someone maintains:
every skillos module the run imported (read from `sys.modules` when it ends, in this process and
in each Ray worker that trained one of its runs), each by the sha256 of its source; the canary's
config as resolved (where it runs left out: compute.* moves no result) with the content of every
file its miniature reads from a folder the config names (DATA_KEYS); and the libraries whose code
trains (torch, transformers, trl, peft, accelerate), each by version, where it is loaded from and
the sha of its Python files. An edit to any module the run
imported, to the canary's YAML, or a library upgrade, makes a different identity.

The identity is written into the canary's folder (IDENTITY) and into every checkpoint under it.
A rerun into that folder first recomputes every identity the folder holds against the code as it
is now (`guard`): a folder made by other code is refused, so its finished runs are never recorded
under the new code's hash (a trainer with the reward's sign flipped would otherwise be recorded as
that code's canary without training). Gate 6 recomputes a passing canary's identity the same way
(`changes`): the canary vouches only while nothing it ran has changed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
import time
from importlib import metadata
from pathlib import Path

from skillos.errors import SkillosError
from skillos.registry import ENVIRONMENTS
from skillos.config.derived import relative_to_config
from skillos.files import write_atomic

IDENTITY = "canary-identity.json"  # in the canary's folder, each run's folder and each checkpoint
LIBRARIES = ("torch", "transformers", "trl", "peft", "accelerate")  # the code that trains, beside skillos's own
PACKAGE = "skillos"


def loaded_modules() -> list[str]:
    """The skillos modules this process has imported (with a source file), sorted."""
    return sorted(name for name, module in list(sys.modules.items())
                  if (name == PACKAGE or name.startswith(PACKAGE + ".")) and
                  str(getattr(module, "__file__", None) or "").endswith(".py"))


def source(name: str) -> Path | None:
    """The source file of skillos module `name` as installed now, found without importing it (its
    parent packages below skillos's subpackages are plain folders); None: it is gone."""
    parts = name.split(".")
    for depth in (2, 1):  # skillos.evals / skillos.training / ... map to folders of their own
        if len(parts) < depth:
            continue
        try:
            spec = importlib.util.find_spec(".".join(parts[:depth]))
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.submodule_search_locations:
            continue
        base = Path(list(spec.submodule_search_locations)[0]).joinpath(*parts[depth:])
        for path in (base / "__init__.py", base.with_suffix(".py")) if len(parts) > depth else (base / "__init__.py",):
            if path.is_file():
                return path
        return None
    return None


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def versions() -> dict:
    """Each library in LIBRARIES as this process would import it: its version, where it is loaded
    from, and the sha of its Python files (a shadowing copy earlier on the path, or a patched file
    under the same version, is another library); None: not installed."""
    out = {}
    for name in LIBRARIES:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
            continue
        spec = importlib.util.find_spec(name)
        root = Path(list(spec.submodule_search_locations)[0]) if spec and spec.submodule_search_locations else None
        # the folder by its digest: a path in the ledger may be redacted (a home folder), a digest is not
        out[name] = (f"{version}, loaded from folder {_digest(str(root.resolve()).encode())[:8]}, files "
                     f"{_library_files(root)}") if root else f"{version} (not importable)"
    return out


_LIBRARY_SHAS: dict = {}  # (folder, its files' sizes and mtimes) -> sha: hashed once a process


def _library_files(root: Path) -> str:
    """The sha of a library's .py files (path and bytes; ~0.4 s for torch's 2,285 files, once)."""
    files = sorted(root.rglob("*.py"))
    key = (str(root), tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files))
    if key not in _LIBRARY_SHAS:
        digest = hashlib.sha256()
        for f in files:
            digest.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
        _LIBRARY_SHAS[key] = digest.hexdigest()[:16]
    return _LIBRARY_SHAS[key]


def config_digest(cfg) -> str:
    """The canary's config as resolved, less where it runs and reports: its identity
    (config.identity: no output paths or parallelism) without the compute section (local, Ray or a
    GPU train the same miniature) and training.report_to."""
    from skillos.config.schema import identity

    data = identity(cfg.to_dict())
    data.pop("compute", None)
    data.get("training", {}).pop("report_to", None)  # where it reports is not what it trains
    files = data_files(cfg)
    if files:  # the miniature's data by content, not by the name of the folder that holds it
        data["files"] = files
    return _digest(json.dumps(data, sort_keys=True, default=str).encode())


# Config keys that name a folder of files a miniature reads (its data): hashed by content into
# the canary's config digest, so a slate rewritten, passed on and put back is another canary.
DATA_KEYS = (("skillgate", "slate_repo"),)


def data_files(cfg) -> dict:
    """{key: {relative path: sha}} of every file under each folder DATA_KEYS names ({} if none);
    a named folder that is missing is recorded as missing."""
    out = {}
    for section, name in DATA_KEYS:
        value = getattr(getattr(cfg, section, None), name, None)
        if not value:
            continue
        root = relative_to_config(cfg, value)
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
        out[f"{section}.{name}"] = {str(p.relative_to(root)): _digest(p.read_bytes()) for p in files} or "missing"
    return out


def identity(modules, config: str) -> dict:
    """{code_hash, modules: {name: sha of its source, or None: gone}, config, versions} now."""
    sources = {}
    for name in sorted(set(modules)):
        path = source(name)
        try:
            sources[name] = _digest(path.read_bytes()) if path is not None else None
        except OSError:  # gone since it was found
            sources[name] = None
    body = {"modules": sources, "config": config, "versions": versions()}
    return {"code_hash": _digest(json.dumps(body, sort_keys=True).encode()), **body}


def changes(recorded: dict, config: str) -> list[str]:
    """What differs between a recorded identity and the same modules, the canary config `config`
    and the libraries now: one phrase each; [] when the identity still holds."""
    if not isinstance(recorded, dict) or not isinstance(recorded.get("modules"), dict) or not recorded["modules"]:
        return ["it carries no identity (recorded before canaries did)"]
    modules, recorded_versions = recorded["modules"], recorded.get("versions")
    if not all(isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in modules.items()) \
            or not isinstance(recorded_versions, dict):
        return ["its identity is malformed (modules: name -> sha, versions: library -> version)"]
    now = identity(modules, config)
    out = [f"{name} {'was missing when it ran' if sha is None else 'removed' if now['modules'][name] is None else 'changed'}"
           for name, sha in modules.items() if sha is None or now["modules"].get(name) != sha]
    if recorded.get("config") != config:
        out.append("the canary's config changed")
    out += [f"{lib} {recorded_versions.get(lib)} -> {version}" for lib, version in now["versions"].items()
            if recorded_versions.get(lib) != version]
    if not out and now["code_hash"] != recorded.get("code_hash"):
        out.append("its code hash does not match what it records")
    return out


def recorded_modules(path: Path) -> list[str]:
    """The modules an identity file records (a run's stamp, written by the process that ran it)."""
    try:
        modules = json.loads(Path(path).read_text(encoding="utf-8")).get("modules") or {}
    except (OSError, ValueError, AttributeError):
        return []
    return [name for name in modules if isinstance(name, str)] if isinstance(modules, dict) else []


def stamp(folder: Path, config: str, modules=None) -> dict:
    """Write into `folder` and every checkpoint folder under it the identity of what made them:
    `modules` (default: what this process imported) with the modules each already records (a run
    a rerun reused was made by those; `guard` checked they still hold), and the config digest.
    Returns the identity written into `folder` itself."""
    folder = Path(folder)
    modules = set(loaded_modules() if modules is None else modules)
    written = None
    for target in [folder] + sorted(p for p in folder.rglob("checkpoint-*") if p.is_dir()):
        ident = identity(modules | set(recorded_modules(target / IDENTITY)), config)
        write_atomic(target / IDENTITY, json.dumps(ident, indent=1, sort_keys=True) + "\n")
        written = written or ident
    return written


def launch_modules(cfg) -> dict:
    """The skillos modules a launch of `cfg` will run because of a switch its canary's miniature
    may not turn on, each with the switch: the environment's engine pool (env.engine_workers: it
    plays every rollout's games and decides `won`), the judge (reward.lambda_cnt with a judge), the
    play-ahead rollouts (training.async_rollouts). Gate 6 asks that the vouching canary ran them."""
    out = {}
    pool = ENVIRONMENTS[cfg.env.name].engine_pool if cfg.env.name in ENVIRONMENTS else None
    if cfg.env.engine_workers and pool:
        out[pool.partition(":")[0]] = f"env.engine_workers {cfg.env.engine_workers}"
    if cfg.reward.lambda_cnt and cfg.judge.backend:
        out["skillos.evals.judge"] = f"reward.lambda_cnt {cfg.reward.lambda_cnt:g} with judge {cfg.judge.backend}"
    if cfg.training.async_rollouts:
        out["skillos.training.curator.async_rollouts"] = "training.async_rollouts"
    return out


def snapshot() -> dict:
    """When a canary starts: the time, and the sha of every skillos module imported so far, so the
    identity written at its end is of the source that ran (`edited_since`)."""
    shas = {}
    for name in loaded_modules():
        path = source(name)
        try:
            shas[name] = _digest(path.read_bytes()) if path is not None else None
        except OSError:
            shas[name] = None
    return {"started_ns": time.time_ns(), "modules": shas}


def edited_since(started: dict, modules) -> list[str]:
    """The modules of `modules` whose source is not what ran: one imported before the start whose
    sha has changed since, or one imported after it whose file was written after the start (it may
    have been imported before or after the edit): a phrase each; [] when none."""
    out = []
    for name in sorted(set(modules)):
        path = source(name)
        try:
            sha = _digest(path.read_bytes()) if path is not None else None
            written = path.stat().st_mtime_ns if path is not None else None
        except OSError:
            sha = written = None
        if name in started["modules"]:  # hashed at the start: the bytes decide (a touch changes nothing)
            if started["modules"][name] != sha:
                out.append(f"{name} changed while the canary ran")
        elif written is not None and written > started["started_ns"]:
            out.append(f"{name} was written after the canary started")
        elif path is None:
            out.append(f"{name} is gone")
    return out


def ran(folder: Path, config: str) -> dict:
    """The identity of a whole canary: this process's modules and every module any identity under
    `folder` records (its runs' processes, Ray workers included), stamped into all of them."""
    modules = set(loaded_modules()).union(*(recorded_modules(p) for p in Path(folder).rglob(IDENTITY)))
    return stamp(folder, config, modules)


def guard(folder: Path, config: str) -> None:
    """Refuse (one line) to run a canary into `folder` when what it holds was made by other code:
    every identity under it is recomputed against the code now; a folder with files and no
    identity of its own was not made by a canary of this skillos. An empty or absent folder passes."""
    folder = Path(folder)
    if not folder.is_dir() or not any(folder.iterdir()):
        return
    own = folder / IDENTITY
    if not own.is_file():
        raise SkillosError(f"canary --out {folder}: it holds files but no {IDENTITY}: not a canary folder of this "
                           "skillos; choose a new --out")
    for path in sorted(folder.rglob(IDENTITY)):
        try:
            recorded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SkillosError(f"canary --out {folder}: {path} is unreadable ({type(exc).__name__}); choose a new "
                               "--out") from None
        differ = changes(recorded, config)
        if differ:
            shown = ", ".join(differ[:3]) + (f" and {len(differ) - 3} more" if len(differ) > 3 else "")
            raise SkillosError(f"canary --out {folder}: made by other code than this ({shown}); its runs cannot vouch "
                               "for this code and are not reused: choose a new --out")
