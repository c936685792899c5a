"""Arms as Ray tasks (compute.backend: ray): each arm of an eval, a sweep (a checkpoint is an arm)
or a run of a matrix plays in one task on a Ray cluster, with the resources it declares, and Ray
runs it again when its worker dies (compute.ray_max_retries). The driver, this process, writes
every row, trace and curated repo into the run folder, and the ledger stays one SQLite file here.
A learning canary's trained run and negative control are two tasks the same way (`run_tasks`;
training/canary).

A task plays into a scratch folder of its own and returns what it wrote there (its new rows and
traces, the curated repo's files); nothing on a worker touches the run folder, so a worker that
dies leaves nothing half-written and its retry starts from the same inputs: the rows are those
of a local run. An arm the run folder already holds in full (a resume) is not submitted; one
begun there continues from its rows and its repo, shipped to the task.

Inputs named by path (game files in SKILLOS_CACHE, --repo folders, checkpoints) are read on the
workers at the same path: true of a local cluster; on several machines, a shared file system.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from skillos.config.derived import curator_config, static_repo_path
from skillos.config.schema import Config
from skillos.errors import SkillosError
from skillos.files import append_bytes, swap_in, temp_sibling
from skillos.evals import run_folder
from skillos.evals.arms import learns
from skillos.registry import RAY_INSTALL, local_backends

LOCAL_CLUSTER = "a local cluster started for the run (stopped after it)"


def require_ray():
    """The ray module, imported only when compute.backend is ray; missing: one line naming the extra."""
    try:
        import ray
    except ImportError:
        raise SkillosError(f"compute.backend ray needs Ray, which is not installed: {RAY_INSTALL}") from None
    return ray


def resources(cfg: Config, model_in_task: bool) -> dict:
    """What a task reserves: one CPU, and compute.ray_gpus_per_task GPUs, or (unset) one GPU when a
    model runs inside the task and compute.gpu names GPUs, else none. Ray hides the GPUs from a
    task that reserves none, so a model in such a task runs on the CPU."""
    gpus = cfg.compute.ray_gpus_per_task
    if gpus is None:
        gpus = 1 if model_in_task and cfg.compute.gpu else 0
    return {"num_cpus": 1, "num_gpus": gpus}


def task_resources(cfg: Config, arm: str) -> dict:
    """What an arm's task reserves: a GPU (see `resources`) when a model of the arm runs inside the
    task (an hf or vllm executor, judge or learning arm's curator)."""
    sections = [cfg.executor, cfg.judge] + ([curator_config(cfg, arm)] if learns(arm) else [])
    return resources(cfg, any(s.backend in local_backends() for s in sections if s.backend))


CONNECT_TIMEOUT_S = 10.0  # how long joining a named cluster may wait for it to answer
# Ray's GCS and client servers are gRPC: they answer HTTP/2's connection preface with a SETTINGS
# frame (type 4, the fourth byte of its header); a web server, Redis or SSH on that port does not.
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def reach(address: str | None, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """A cluster named HOST:PORT (or ray://HOST:PORT) answers within `timeout_s` and speaks Ray's
    protocol (gRPC), or a one-line error says which (ray.init would wait on it without end, or
    crash after runs were marked running); auto and a local cluster need no probe."""
    if not address or address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s) as sock:
            sock.settimeout(timeout_s)
            sock.sendall(HTTP2_PREFACE)
            first = _read(sock, 9)
    except (OSError, ValueError) as exc:
        raise SkillosError(f"compute.ray_address {address}: no Ray cluster answers there within {timeout_s:g} s "
                           f"({exc.strerror or exc if isinstance(exc, OSError) else exc}); start it (ray start "
                           "--head) or fix the address") from None
    if len(first) < 9 or first[3] != 4:
        said = repr(first[:40].decode("ascii", "replace")) if first else f"nothing within {timeout_s:g} s"
        raise SkillosError(f"compute.ray_address {address}: something listens there but it is not a Ray cluster "
                           f"(it answered Ray's gRPC handshake with {said}); give the head's GCS port (ray "
                           "start --head prints it) or ray://HOST:10001")


def _read(sock, n: int) -> bytes:
    """Up to `n` bytes, fewer when the peer closes or stays silent past the socket's timeout."""
    data = b""
    while len(data) < n:
        try:
            chunk = sock.recv(n - len(data))
        except socket.timeout:
            break
        if not chunk:
            break
        data += chunk
    return data


def plan(cfg: Config) -> dict:
    """The Ray launch of `cfg` as data (sweep --dry-run, skillos plan): the cluster, each arm's task."""
    return {"backend": "ray", "address": cfg.compute.ray_address or LOCAL_CLUSTER,
            "max_retries": cfg.compute.ray_max_retries,
            "tasks": [{"arm": arm, **task_resources(cfg, arm)} for arm in cfg.eval.arms]}


def plan_lines(p: dict) -> list[str]:
    out = [f"ray: {len(p['tasks'])} tasks on {p['address']}, each run again up to {p['max_retries']} times "
           "if its worker dies; the driver writes every row"]
    out += [f"  {t['arm']}: {t['num_cpus']} CPU, {t['num_gpus']:g} GPU" for t in p["tasks"]]
    return out


def complete(arm: str, done: dict, held_out, train) -> bool:
    """Whether the run folder holds every game of the arm (a resume does not submit it)."""
    phases = {"eval": held_out, **({"train": train} if learns(arm) else {})}
    return all(g.id in done.get(phase, {}) for phase, games in phases.items() for g in games)


@contextlib.contextmanager
def cluster(cfg: Config):
    """This process joined to the cluster: compute.ray_address, or a local one started here with
    eval.workers CPUs (unset: this machine's), one per task at a time. A cluster this process
    already joined (a notebook, the tests) is used as it is and left running."""
    ray = require_ray()
    if ray.is_initialized():
        yield ray
        return
    address = cfg.compute.ray_address
    reach(address)
    local = {} if address else {"num_cpus": cfg.eval.workers or os.cpu_count() or 1}
    # log_to_driver off: a worker's prints would land in this process's stdout, the --json report's
    ray.init(address=address, include_dashboard=False, log_to_driver=False, **local)
    try:
        yield ray
    finally:
        ray.shutdown()


@dataclass(frozen=True)
class Task:
    """One unit of work for the cluster: `fn(*args)` on a worker, with the resources it reserves;
    `label` names it in errors ("arm no_memory", "canary control run")."""

    label: str
    fn: Callable
    args: tuple
    resources: dict


def run_tasks(cfg: Config, tasks: list[Task], on_done, rerun: str = "") -> None:
    """Every task on the cluster at once, each run again when its worker dies (compute.ray_max_retries;
    an error the task raises is raised here, not retried); `on_done(task, result)` runs in this
    process, the driver, as each finishes, so only the driver writes. An error or Ctrl-C cancels
    the tasks still running. `rerun`: what to do after a worker lost too often."""
    if not tasks:
        return
    with cluster(cfg) as ray:
        retries = dict(max_retries=cfg.compute.ray_max_retries, retry_exceptions=False)  # a lost worker, not an error
        remote, pending = {}, {}
        for task in tasks:
            if task.fn not in remote:
                remote[task.fn] = ray.remote(task.fn)
            pending[remote[task.fn].options(**retries, **task.resources).remote(*task.args)] = task
        try:
            while pending:
                [ref], _ = ray.wait(list(pending), num_returns=1)
                task = pending.pop(ref)
                on_done(task, _result(ray, ref, task.label, cfg.compute.ray_max_retries, rerun))
        finally:  # an error or Ctrl-C: the others stop now; what was written so far resumes
            for ref in pending:
                ray.cancel(ref, force=True)


def play_arms(jobs: list, out: Path, play: Callable, progress=None) -> dict:
    """Every job (cfg, arm, held_out, train, out, done), as experiment.run_eval makes them: the
    arms already complete in `out` from their rows, the others as Ray tasks, each playing its arm
    with `play` (experiment.play_arm, handed down so this module sits below the eval); each task's
    rows, traces and repo are written into `out` as it finishes. Returns {arm: held-out rows}."""
    rows, tasks = {}, []
    for job_cfg, arm, held_out, train, _, done in jobs:
        if complete(arm, done, held_out, train):
            rows[arm] = [done["eval"][g.id] for g in held_out]
            continue
        repo = (_pack(run_folder.repo_dir(out, arm)) or {}) if _curates(job_cfg, arm) else None
        tasks.append(Task(f"arm {arm}", play_unit, (job_cfg, arm, held_out, train, done, repo, play),
                          task_resources(job_cfg, arm)))
        if progress:
            progress(arm, "eval", len(done.get("eval", {})), len(held_out), "submitted to ray")

    def written(task: Task, result: dict) -> None:
        arm = task.args[1]
        _write(out, arm, result)
        rows[arm] = result["rows"]
        if progress:
            progress(arm, "eval", len(task.args[2]), len(task.args[2]), "finished on ray")

    run_tasks(jobs[0][0], tasks, written, rerun=": rerun with --resume --out OUT")
    return {job[1]: rows[job[1]] for job in jobs}


def play_unit(cfg: Config, arm: str, held_out, train, done: dict, repo: dict | None, play: Callable) -> dict:
    """One arm in a scratch folder (on a Ray worker), played by `play` (experiment.play_arm): its
    held-out rows, the text of every row and trace file it wrote (new games only), and its curated
    repo's files."""
    missing = next((g.path for g in list(held_out) + list(train)
                    if getattr(g, "path", None) and not Path(g.path).exists()), None)
    if missing:
        raise SkillosError(f"arm {arm}: game file {missing} is not on this Ray worker; compute.backend ray reads "
                           "inputs at the same path on every worker (a shared file system, SKILLOS_CACHE)")
    with tempfile.TemporaryDirectory(prefix="skillos-arm-") as scratch:
        scratch = Path(scratch)
        if repo is not None:
            _unpack(run_folder.repo_dir(scratch, arm), repo)
        rows = play(cfg, arm, held_out, train, scratch, done)
        names = list(run_folder.ROW_FILES.values()) + [run_folder.TRACES]
        files = {name: (scratch / name).read_bytes() for name in names if (scratch / name).exists()}
        return {"rows": rows, "files": files,
                "repo": _pack(run_folder.repo_dir(scratch, arm)) if repo is not None else None}


def _curates(cfg: Config, arm: str) -> bool:
    """An arm with a repo folder of its own in the run folder (a learning arm)."""
    return learns(arm) and not static_repo_path(cfg, arm)


def _result(ray, ref, label: str, retries: int, rerun: str) -> dict:
    """A task's result; its error as the one-line error it raised, or a worker lost too often."""
    from ray import exceptions

    try:
        return ray.get(ref)
    except exceptions.RayTaskError as exc:  # the task raised (an aborted arm, a bad input): that error
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BaseException):
            raise cause from None
        raise SkillosError(f"{label}: its Ray task failed: {str(exc).splitlines()[0]}") from None
    except exceptions.RayError as exc:  # the worker (or its node) died once more than the retries allow
        raise SkillosError(f"{label}: its Ray worker was lost {retries + 1} time(s) (compute.ray_max_retries "
                           f"{retries}): {type(exc).__name__}; what finished is written{rerun}") from None


def _write(out: Path, arm: str, result: dict) -> None:
    """A finished task's files appended to the run folder's, and its repo put in place."""
    for name, data in result["files"].items():
        append_bytes(out / name, data)  # as the runner's and the trace writer's appends
    if result["repo"] is not None:
        target = run_folder.repo_dir(out, arm)
        fresh = temp_sibling(target)
        try:
            _unpack(fresh, result["repo"])
        except BaseException:
            shutil.rmtree(fresh, ignore_errors=True)
            raise
        swap_in(fresh, target)


def _pack(folder: Path) -> dict | None:
    """A folder's files, relative path -> bytes (None: no folder)."""
    if not folder.is_dir():
        return None
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _unpack(folder: Path, files: dict | None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in (files or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
