"""One evaluation run: every arm of the config on the same held-out games, then the report.

Arms: `no_memory` (empty repo), `closed_loop` (the curator learns on train games, then keeps
curating after every held-out game, as SkillOS evaluates), `static_repo` (a fixed skill folder,
no curation), `shuffled` (closed_loop with k random skills instead of BM25: content vs context).
All arms play the identical held-out list, so every comparison is paired.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import multiprocessing as mp
import os
import queue
import shutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Callable

import yaml

from skillos.config import Config, check_inputs, curator_config, static_repo_path
from skillos.errors import SkillError, SkillosError
from skillos.evals import report as reporting
from skillos.evals import trace
from skillos.evals.envs.registry import environment
from skillos.evals.records import GameRow
from skillos.evals.runner import curation_progress, run_arm
from skillos.repo import SkillRepo
from skillos.files import write_atomic
from skillos.safety import RunLock, die_with_parent, json_text

# (arm, phase, done, total, live) with live = "won 3/5 measured, 0 unmeasured, 1 coerced" or ""
Progress = Callable[[str, str, int, int, str], None]


def load_games(cfg: Config, split: str, n: int, progress=None):
    """The tasks of a split, from the config's environment (skillos.evals.envs.registry)."""
    return environment(cfg).load_tasks(cfg, split, n, progress)


def default_out_dir(cfg: Config) -> Path:
    """runs/NAME-TIME, with a suffix if a run started in the same second already has it."""
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = Path(cfg.eval.output_dir) / f"{cfg.experiment.name}-{stamp}"
    out, n = base, 1
    while out.exists():
        n += 1
        out = base.with_name(f"{base.name}-{n}")
    return out


ROW_FILES = {"train": "curation.jsonl", "eval": "games.jsonl"}
LEARNING_ARMS = ("closed_loop", "shuffled")  # arms with a curator and a repo folder of their own


def learns(arm: str) -> bool:
    """Arms that curate (train games first, then held-out): closed_loop, shuffled, curator:NAME."""
    return arm in LEARNING_ARMS or arm.startswith("curator:")


def run_eval(cfg: Config, out_dir: str | Path | None = None, progress: Progress | None = None,
             ledger=None, resume: bool = False, overwrite: bool = False) -> dict:
    """Run every arm; write games.jsonl, curation.jsonl, the curated repo and report.json, and
    record the experiment, its runs and evals in `ledger` (a skillos.ledger.Ledger) if given.

    An output folder that is not empty is refused unless `resume` (continue it: finished games
    are not played again) or `overwrite` (delete it and start over)."""
    out = Path(out_dir) if out_dir else default_out_dir(cfg)
    check_out(out, resume, overwrite)
    created = not out.exists()
    lock = RunLock(out).acquire()  # one writer per folder: a second one, or a resume while it lives, is refused
    try:
        return _run_eval_locked(cfg, out, progress, ledger, resume, overwrite)
    finally:
        lock.release()
        if created and {p.name for p in out.iterdir()} <= {RunLock.NAME}:
            shutil.rmtree(out, ignore_errors=True)  # refused before anything was written: no folder


def _run_eval_locked(cfg: Config, out: Path, progress, ledger, resume: bool, overwrite: bool) -> dict:
    done = _prepare_out(out, cfg, resume, overwrite)
    check_inputs(cfg)  # named inputs exist (beside the config file) before anything is played
    for arm in cfg.eval.arms:
        if static_repo_path(cfg, arm):
            if not Path(static_repo_path(cfg, arm)).is_dir():
                raise SkillosError(f"arm {arm}: {static_repo_path(cfg, arm)} is not a skill folder")
            try:  # fail on a bad folder before any game is played
                SkillRepo.load(static_repo_path(cfg, arm))  # an existing empty folder is honest: step 0
            except SkillError as exc:
                raise SkillosError(f"arm {arm}: {exc}") from None

    def gen_progress(split):
        return (lambda done, total: progress("generate", split, done, total, "")) if progress else None

    split, n = game_sets(cfg)["held_out"]
    held_out = load_games(cfg, split, n, gen_progress(split))
    train = []
    split, n = game_sets(cfg)["train"]
    if any(learns(arm) for arm in cfg.eval.arms) and n:
        train = load_games(cfg, split, n, gen_progress(split))
    overlap = {g.content_hash for g in train} & {g.content_hash for g in held_out}
    if overlap:
        raise SkillosError(f"{len(overlap)} held-out games also appear in {cfg.env.train_split}; refusing to run")

    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "config.yaml", yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    record = _Record(ledger, cfg, out, resumed=resume)
    jobs = [(cfg, arm, held_out, train, out, done.get(arm, {})) for arm in cfg.eval.arms]
    workers = min(cfg.eval.workers or os.cpu_count() or 1, len(jobs))
    try:
        if workers == 1:
            rows = {job[1]: play_arm(*job, progress=progress) for job in jobs}
        else:
            rows = _play_in_parallel(jobs, workers, progress)
    except KeyboardInterrupt:
        record.interrupted()
        raise
    except BaseException as exc:
        record.crashed(exc)
        raise
    result = reporting.build(cfg, rows, out, n_train=len(train))
    record.finished(result, out / "games.jsonl")
    write_atomic(out / "report.json", json_text(result))  # redacted, atomic, no Infinity
    return result


def record_experiment(ledger, cfg: Config) -> int:
    """The ledger experiment of a config (same name and config hash: the same experiment)."""
    return ledger.find_or_add_experiment(
        cfg.experiment.name, cfg.hash(), hypothesis=cfg.experiment.hypothesis,
        success_metric=f"success rate vs {cfg.eval.control.arm} (paired, exact McNemar)")


class _Record:
    """What an eval writes to the ledger: the experiment, one run per arm, one eval per run,
    and an operational failure if the eval crashed. No ledger: records nothing."""

    def __init__(self, ledger, cfg: Config, out: Path, resumed: bool = False):
        self.ledger, self.runs = ledger, {}
        if ledger is None:
            return
        self.experiment = record_experiment(ledger, cfg)
        ledger.correct("experiments", self.experiment, "status", "eval started", value="running")
        output = str(out.resolve())
        if resumed:  # the killed runs of this folder end here, instead of "running" forever
            for row in ledger.rows("runs"):
                if row["experiment_id"] == self.experiment and row["ended_at"] is None and \
                        json.loads(row["config_json"] or "{}").get("output") == output:
                    ledger.end_run(row["id"], "interrupted", f"killed; resumed from {output}")
        snapshot = {**cfg.to_dict(), "output": output}  # where the run's rows are
        for arm in cfg.eval.arms:
            self.runs[arm] = ledger.start_run(self.experiment, arm, snapshot, cfg.env.seed,
                                              executor_fingerprint(cfg))

    def interrupted(self) -> None:
        """Stopped by a person (Ctrl-C): the runs end as interrupted; not a failure."""
        if self.ledger is None:
            return
        for run in self.runs.values():
            self.ledger.end_run(run, "interrupted", "stopped by KeyboardInterrupt")
        self.ledger.correct("experiments", self.experiment, "status", "interrupted",
                            value="interrupted")

    def crashed(self, exc: BaseException) -> None:
        if self.ledger is None:
            return
        what = f"eval crashed: {type(exc).__name__}: {exc}"[:500]
        for run in self.runs.values():
            self.ledger.end_run(run, "crashed", what)
        self.ledger.correct("experiments", self.experiment, "status", what, value="crashed")
        self.ledger.add_failure(what, "wasted-compute", kind="operational", detected_by="toolkit",
                                experiment_id=self.experiment, run_id=next(iter(self.runs.values())))

    def finished(self, result: dict, jsonl: Path) -> None:
        if self.ledger is None:
            return
        digest = hashlib.sha256(jsonl.read_bytes()).hexdigest()
        for arm, run in self.runs.items():
            self.ledger.add_eval(run, arm, result["arms"][arm], str(jsonl.resolve()), digest)
            self.ledger.end_run(run, "finished")
            self._curator_failures(arm, run, result)
        self.ledger.correct("experiments", self.experiment, "status", "eval finished",
                            value="measured")
        result["ledger"] = {"path": str(self.ledger.path), "experiment_id": self.experiment,
                            "run_ids": self.runs}


    def _curator_failures(self, arm: str, run: int, result: dict) -> None:
        """Failed curator calls and refused operations of an arm, as one ledger failure: the
        curated repo is what a curator that failed this often produced."""
        counts = [c for c in (result.get("train_curation", {}).get(arm), result["arms"][arm]) if c]
        calls = sum(c["curator_calls"] for c in counts)
        failed = sum(c["curator_failed_calls"] for c in counts)
        refused = sum(c["curator_refused_ops"] for c in counts)
        ops = refused + sum(c["curator_applied_ops"] for c in counts)
        if failed or refused:
            self.ledger.add_failure(
                f"arm {arm}: {failed} of {calls} curator calls failed, {refused} of {ops} curator "
                "operations refused", "near-miss", kind="operational", detected_by="toolkit",
                experiment_id=self.experiment, run_id=run)


def executor_fingerprint(cfg: Config) -> str:
    """What makes two runs' executors the same executor: a control only controls for its own."""
    e = cfg.executor
    return (f"executor={e.backend} model={e.model} reasoning={e.reasoning_effort} "
            f"max_tokens={e.max_tokens} history={e.history_length} max_steps={cfg.env.max_steps} "
            f"top_k={cfg.retrieval.top_k}")


def game_sets(cfg: Config) -> dict:
    """The (split, number of games) a launch loads for its held-out and train games: the one place
    eval, optimize (held_out is its sealed test) and the gates' trace read them from."""
    return {"held_out": (cfg.env.split, cfg.env.n_games), "train": (cfg.env.train_split, cfg.env.n_train_games)}


def arm_settings(cfg: Config) -> dict:
    """How every game of a launch is played, from the config: the one place eval, training and
    the gates' dry-run read max_steps, top_k and the error budget from."""
    return dict(max_steps=environment(cfg).turns(cfg), top_k=cfg.retrieval.top_k,
                max_error_rate=cfg.eval.max_error_rate)


def check_out(out: Path, resume: bool = False, overwrite: bool = False) -> bool:
    """Whether `out` holds a previous run; refuses a non-empty folder without resume or
    overwrite, and a resume with nothing to resume. Cheap: launchers call it before the gates."""
    if out.exists() and not out.is_dir():
        raise SkillosError(f"{out}: is a file; the output folder must be a folder")
    used = out.exists() and any(p.name != RunLock.NAME for p in out.iterdir())
    if resume and not used:
        raise SkillosError(f"{out}: nothing to resume (the folder is empty or missing)")
    if used and not (resume or overwrite):
        raise SkillosError(f"{out}: output folder exists and is not empty; --resume to continue "
                           "it, --overwrite to replace it, or choose another --out")
    return used


def finished_report(out: Path) -> dict | None:
    """The report of a run in `out` that finished: report.json (written after every arm's ledger
    record) whose arms' attempted games are all in games.jsonl; else None (the resume plays what
    is missing). A damaged report.json is a one-line error."""
    from skillos import safety
    from skillos.evals.records import read_game_rows

    if not (out / "report.json").exists():
        return None
    report = safety.read_json_file(out / "report.json", "eval report")
    if not isinstance(report.get("arms"), dict) or not isinstance(report.get("comparisons"), list):
        raise SkillosError(f"{out / 'report.json'}: damaged eval report (no arms or comparisons); move it away "
                           "to resume the run, or choose another --out")
    rows = read_game_rows(out / "games.jsonl")
    for arm, summary in report["arms"].items():
        played = {r["game_id"] for r in rows if r.get("arm") == arm and r.get("phase", "eval") == "eval"}
        if not isinstance(summary, dict) or summary.get("attempted") != len(played):
            return None  # rows lost since the report: not finished, the resume plays them again
    return report


def same_config(out: Path, cfg: Config) -> bool:
    """Whether the run in `out` was made with this config (its config.yaml, as written): what a
    resume must check before it continues another run's rows."""
    from skillos import safety

    try:
        recorded = safety.load_yaml(safety.read_text(out / "config.yaml", safety.MAX_CONFIG_BYTES, "config.yaml"),
                                    str(out / "config.yaml"))
    except SkillosError:
        return False
    return recorded == yaml.safe_load(yaml.safe_dump(cfg.to_dict(), sort_keys=False))


def _prepare_out(out: Path, cfg: Config, resume: bool, overwrite: bool) -> dict:
    """Check or clear the output folder; with `resume`, the rows each arm already finished
    ({arm: {phase: {game id: row}}}). A learning arm whose repo was killed mid-curation (or
    whose rows and curated count disagree) cannot resume exactly: its rows and repo are
    removed and it starts over."""
    if not check_out(out, resume, overwrite):
        return {}
    if overwrite:  # everything but the lock this process holds
        for path in out.iterdir():
            if path.name != RunLock.NAME:
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        return {}
    if not same_config(out, cfg):
        raise SkillosError(f"{out}: its config.yaml differs from this config; resume with the "
                           "same config (and the same --n-games), or choose another --out")
    rows = {phase: _read_rows(out / name) for phase, name in ROW_FILES.items()}
    done: dict = {}
    for r in rows["train"] + rows["eval"]:
        done.setdefault(r["arm"], {}).setdefault(r["phase"], {})[r["game_id"]] = r
    restart = []
    for arm in cfg.eval.arms:
        if learns(arm):
            finished = sum(len(v) for v in done.get(arm, {}).values())
            state = curation_progress(out / f"repo-{arm}")
            if state["state"] != "idle" or state["curated"] != finished:
                restart.append(arm)
    for arm in restart:
        done.pop(arm, None)
        shutil.rmtree(out / f"repo-{arm}", ignore_errors=True)
    for phase, name in ROW_FILES.items():  # rewrite: no partial last line, no restarted arm
        kept = [r for r in rows[phase] if r["arm"] not in restart]
        write_atomic(out / name, "".join(json.dumps(r) + "\n" for r in kept))
    trace.prune(out / trace.TRACES, {(r["arm"], r["phase"], r["game_id"]) for phase in rows
                                     for r in rows[phase] if r["arm"] not in restart})
    return done


def _read_rows(path: Path) -> list[dict]:
    """JSONL rows (old rows read too); a last line cut off by a kill is dropped (its game is
    played again), any other damaged line is a one-line error (records.read_game_rows)."""
    from skillos.evals.records import read_game_rows

    return read_game_rows(path)


def play_arm(cfg: Config, arm: str, held_out, train, out: Path, done: dict | None = None,
             progress: Progress | None = None):
    """One arm, start to end: curation on train games first for the arms that learn."""
    done = done or {}
    env = environment(cfg)
    tasks = list(held_out) + list(train)
    common = dict(env=env.make_env(tasks), make_env=lambda: env.make_env(tasks),
                  executor=env.make_executor(cfg.executor), concurrency=cfg.eval.concurrency,
                  wave_size=cfg.eval.wave_size, **arm_settings(cfg))
    curator, mode = None, cfg.retrieval.mode
    if arm == "no_memory":
        repo = SkillRepo(None)
    elif static_repo_path(cfg, arm):
        repo = SkillRepo.load(static_repo_path(cfg, arm))
    else:
        repo = SkillRepo.load(out / f"repo-{arm}")  # empty, or where a resumed run left it
        curator = env.make_curator(curator_config(cfg, arm), cfg.training.group_size)
        mode = "shuffled" if arm == "shuffled" else mode
        if train:
            run_arm(arm, train, repo=repo, curator=curator, retrieval_mode=mode,
                    out=out / ROW_FILES["train"], phase="train", done=done.get("train"),
                    on_game=_tick(progress, arm, "train", len(train)), **common)
    return run_arm(arm, held_out, repo=repo, curator=curator, retrieval_mode=mode,
                   out=out / ROW_FILES["eval"], phase="eval", done=done.get("eval"),
                   on_game=_tick(progress, arm, "eval", len(held_out)), **common)


def _play_in_parallel(jobs, workers: int, progress: Progress | None) -> dict:
    """Arms are independent (each has its own repo and curator), so they run in separate
    processes; rows are identical to a sequential run. Each JSONL line is one append."""
    context = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    # No manager process: the progress queue reaches each worker when it starts, and every worker
    # dies with this process (a kill -9 of the main process must not leave writers behind).
    events = context.Queue()
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_start_worker,
                             initargs=(os.getpid(), events)) as pool:
        futures = {job[1]: pool.submit(_play_arm_reporting, job) for job in jobs}
        try:
            while not all(f.done() for f in futures.values()):
                _drain(events, progress, timeout=0.2)
            _drain(events, progress, timeout=0)
            return {arm: future.result() for arm, future in futures.items()}
        except BaseException:  # Ctrl-C or an aborted arm: stop the other arms now, not when they end
            for process in list((getattr(pool, "_processes", None) or {}).values()):  # no public handle
                process.kill()
            raise


_EVENTS = None  # in a worker: the queue its progress events go to


def _start_worker(parent_pid: int, events) -> None:
    global _EVENTS
    die_with_parent(parent_pid)
    _EVENTS = events


def _play_arm_reporting(job):
    return play_arm(*job, progress=lambda *event: _EVENTS.put(event))


def _drain(events, progress, timeout: float) -> None:
    try:
        event = events.get(timeout=timeout) if timeout else events.get_nowait()
        while True:
            if progress:
                progress(*event)
            event = events.get_nowait()
    except queue.Empty:
        return


def _tick(progress, arm, phase, total):
    if progress is None:
        return None
    count = {"done": 0, "won": 0, "measured": 0, "coerced": 0}

    def on_game(row):
        count["done"] += 1
        count["won"] += bool(row["success"])
        count["measured"] += not row["unmeasured"]
        count["coerced"] += row["coerced_actions"]
        live = (f"won {count['won']}/{count['measured']} measured, "
                f"{count['done'] - count['measured']} unmeasured, {count['coerced']} coerced")
        progress(arm, phase, count["done"], total, live)

    return on_game
