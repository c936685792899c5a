"""One evaluation run: every arm of the config on the same held-out games, then the report.

Arms: `no_memory` (empty repo), `closed_loop` (the curator learns on train games, then keeps
curating after every held-out game, as SkillOS evaluates), `static_repo` (a fixed skill folder,
no curation), `shuffled` (closed_loop with k random skills instead of BM25: content vs context).
All arms play the identical held-out list, so every comparison is paired.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import sys
import queue
import shutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Callable

from skillos.evals import prices
from skillos.config.derived import curator_config, static_repo_path
from skillos.config.rules import check_inputs
from skillos.config.schema import Config
from skillos.errors import SkillError, SkillosError
from skillos.registry import compute_of
from skillos.evals import report as reporting
from skillos.evals import conclusion, distributed, run_folder, trace
from skillos.evals.arms import arm_settings, game_sets, learns, load_games
from skillos.evals.records import row_mean
from skillos.evals.backends import usage
from skillos.evals.envs.registry import environment
from skillos.evals.runner import curation_progress, run_arm
from skillos.files import write_atomic
from skillos.ledger.experiments import EvalRecord
from skillos.repo import SkillRepo
from skillos.safety import RunLock, die_with_parent, json_text
from skillos.registry import local_backends

# (arm, phase, done, total, live) with live = "won 3/5 measured, 0 unmeasured, 1 coerced" or ""
Progress = Callable[[str, str, int, int, str], None]


def run_eval(cfg: Config, out_dir: str | Path | None = None, progress: Progress | None = None,
             ledger=None, resume: bool = False, overwrite: bool = False, gate_tokens: dict | None = None) -> dict:
    """Run every arm; write games.jsonl, curation.jsonl, the curated repo and report.json, and
    record the experiment, its runs and evals in `ledger` (a skillos.ledger.Ledger) if given.
    `gate_tokens`: what the launch gates' dry run spent before it (usage.since), reported beside
    the arms' own.

    An output folder that is not empty is refused unless `resume` (continue it: finished games
    are not played again) or `overwrite` (delete it and start over)."""
    out = Path(out_dir) if out_dir else run_folder.default_out_dir(cfg)
    run_folder.check_out(out, resume, overwrite)
    created = not out.exists()
    lock = RunLock(out).acquire()  # one writer per folder: a second one, or a resume while it lives, is refused
    try:
        return _run_eval_locked(cfg, out, progress, ledger, resume, overwrite, gate_tokens)
    finally:
        lock.release()
        if created and {p.name for p in out.iterdir()} <= {RunLock.NAME}:
            shutil.rmtree(out, ignore_errors=True)  # refused before anything was written: no folder


def _run_eval_locked(cfg: Config, out: Path, progress, ledger, resume: bool, overwrite: bool,
                     gate_tokens: dict | None = None) -> dict:
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
    write_atomic(out / run_folder.CONFIG, run_folder.config_text(cfg))
    record = EvalRecord(ledger, cfg, out, resumed=resume)
    jobs = [(cfg, arm, held_out, train, out, done.get(arm, {})) for arm in cfg.eval.arms]
    workers = min(cfg.eval.workers or os.cpu_count() or 1, len(jobs))
    try:
        if compute_of(cfg).distributes:  # each arm a Ray task; rows written here, as they finish
            rows = distributed.play_arms(jobs, out, play_arm, progress)
        elif workers == 1:
            rows = {job[1]: play_arm(*job, progress=progress) for job in jobs}
        else:
            rows = _play_in_parallel(jobs, workers, progress)
    except (KeyboardInterrupt, SystemExit) as exc:  # Ctrl-C, or `kill PID` (the CLI's SIGTERM raises SystemExit)
        record.interrupted(exc)
        raise
    except BaseException as exc:
        record.crashed(exc)
        raise
    result = reporting.build(cfg, rows, out, n_train=len(train))
    result["api_cost"] = api_cost(cfg, {arm: getattr(r, "tokens", None) for arm, r in rows.items()}, gate_tokens)
    record.finished(result, out / run_folder.GAMES)
    if ledger is not None and cfg.family is None:  # the default conclusion, from the verdicts (a matrix
        # writes one for all its runs); anyone may add theirs beside it
        result["ledger"]["conclusion"] = conclusion.write(ledger, result["ledger"]["experiment_id"], result)
    write_atomic(out / run_folder.REPORT, json_text(result))  # redacted, atomic, no Infinity
    return result


def api_cost(cfg: Config, tokens: dict, gate_tokens: dict | None = None) -> dict:
    """What the run's paid API calls were estimated to cost before it ran (evals/prices.py) and
    what its calls measured, per arm and for the launch gates' dry run (`gate_tokens`; None: not
    counted, this eval was started without its gates): the tokens the endpoints reported and their
    cost at the same prices (None + reason where calls were not counted in a process this one saw)."""
    priced = {f"{s.backend}:{s.model}": prices.price(s) if prices.paid(s) else prices.Price(0.0, 0.0, "not billed")
              for s in (cfg.executor, cfg.curator, cfg.judge)}
    measured = {}
    for arm, used in tokens.items():
        if used is None:
            measured[arm] = {"tokens": None, "usd": None, "reason": "played where this process could not count its "
                                                                    "calls (a Ray task)"}
            continue
        measured[arm] = _priced(used, priced)
    measured_gates = (_priced(gate_tokens, priced) if gate_tokens is not None else
                      {"tokens": None, "usd": None, "reason": "run without the launch gates (no dry run counted)"})
    return {"estimate": prices.estimate(cfg), "measured": measured, "gates_dry_run": measured_gates}


def _priced(used: dict, priced: dict) -> dict:
    """Tokens by backend:model and their cost at `priced` (None where a price or a count is missing)."""
    usd, unknown = 0.0, []
    for key, row in used.items():
        p = priced.get(key)
        if p is None or not p.known or row["unreported_calls"]:
            unknown.append(key)
        else:
            usd += (row["prompt_tokens"] * p.input + row["completion_tokens"] * p.output) / 1e6
    return {"tokens": used, "usd": None if unknown else usd,
            "reason": f"no price or unreported tokens for {', '.join(unknown)}" if unknown else None}


def _prepare_out(out: Path, cfg: Config, resume: bool, overwrite: bool) -> dict:
    """Check or clear the output folder; with `resume`, the rows each arm already finished
    ({arm: {phase: {game id: row}}}). A learning arm whose repo was killed mid-curation (or
    whose rows and curated count disagree) cannot resume exactly: its rows and repo are
    removed and it starts over."""
    if not run_folder.check_out(out, resume, overwrite):
        return {}
    if overwrite:  # everything but the lock this process holds
        for path in out.iterdir():
            if path.name != RunLock.NAME:
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        return {}
    if not run_folder.same_config(out, cfg):
        raise SkillosError(f"{out}: its config.yaml differs from this config; resume with the "
                           "same config (and the same --n-games), or choose another --out")
    rows = {phase: run_folder.read_rows(out, phase) for phase in run_folder.ROW_FILES}
    done: dict = {}
    for r in rows["train"] + rows["eval"]:
        done.setdefault(r["arm"], {}).setdefault(r["phase"], {})[r["game_id"]] = r
    restart = []
    for arm in cfg.eval.arms:
        if learns(arm):
            finished = sum(len(v) for v in done.get(arm, {}).values())
            state = curation_progress(run_folder.repo_dir(out, arm))
            if state["state"] != "idle" or state["curated"] != finished:
                restart.append(arm)
    for arm in restart:
        done.pop(arm, None)
        shutil.rmtree(run_folder.repo_dir(out, arm), ignore_errors=True)
    for phase, name in run_folder.ROW_FILES.items():  # rewrite: no partial last line, no restarted arm
        kept = [r for r in rows[phase] if r["arm"] not in restart]
        write_atomic(out / name, "".join(json.dumps(r) + "\n" for r in kept))
    trace.prune(out / run_folder.TRACES, {(r["arm"], r["phase"], r["game_id"]) for phase in rows
                                          for r in rows[phase] if r["arm"] not in restart})
    return done


def play_arm(cfg: Config, arm: str, held_out, train, out: Path, done: dict | None = None,
             progress: Progress | None = None):
    """One arm, start to end: curation on train games first for the arms that learn; its result
    says what its model calls used (`tokens`, by backend:model, as the endpoints reported them)."""
    before = usage.snapshot()
    rows = ArmRows(_play_arm(cfg, arm, held_out, train, out, done, progress))
    rows.tokens = usage.since(before)
    return rows


class ArmRows(list):
    """An arm's rows in game order, and `tokens`: what its model calls used in the process that
    played it (usage.since), which travels with the rows from a worker process."""

    tokens: dict | None = None


def _play_arm(cfg: Config, arm: str, held_out, train, out: Path, done: dict | None, progress: Progress | None):
    done = done or {}
    env = environment(cfg)
    tasks = list(held_out) + list(train)
    common = dict(env=env.make_env(tasks), make_env=lambda: env.make_env(tasks),
                  executor=env.make_executor(cfg.executor), **arm_settings(cfg, arm))
    curator = None
    if arm == "no_memory":
        repo = SkillRepo(None)
    elif static_repo_path(cfg, arm):
        repo = SkillRepo.load(static_repo_path(cfg, arm))
    else:
        repo = SkillRepo.load(run_folder.repo_dir(out, arm))  # empty, or where a resumed run left it
        curator = env.make_curator(curator_config(cfg, arm), cfg.training.group_size)
        if train:
            run_arm(arm, train, repo=repo, curator=curator, out=out / run_folder.ROW_FILES["train"],
                    phase="train", done=done.get("train"),
                    on_game=_tick(progress, arm, "train", len(train)), **common)
    return run_arm(arm, held_out, repo=repo, curator=curator, out=out / run_folder.ROW_FILES["eval"],
                   phase="eval", done=done.get("eval"), trials=cfg.eval.trials,
                   on_game=_tick(progress, arm, "eval", len(held_out)), **common)


def start_method(cfg) -> str:
    """How arm workers start: fork (fast, nothing to pickle) unless a backend of this eval runs
    model weights in this process. A forked child of a process whose torch has started (its
    OpenMP threads, CUDA) can hang or cannot use CUDA again: measured, hf arm workers forked after
    the parent ran the model sat at 0 CPU seconds for 9 minutes. Those start fresh (spawn)."""
    runs_weights = any(b.backend in local_backends() for b in (cfg.executor, cfg.curator, cfg.judge))
    return "fork" if "fork" in mp.get_all_start_methods() and not runs_weights else "spawn"


def _play_in_parallel(jobs, workers: int, progress: Progress | None) -> dict:
    """Arms are independent (each has its own repo and curator), so they run in separate
    processes; rows are identical to a sequential run. Each JSONL line is one append."""
    context = mp.get_context(start_method(jobs[0][0]))
    # No manager process: the progress queue reaches each worker when it starts, and every worker
    # dies with this process (a kill -9 of the main process must not leave writers behind).
    events = context.Queue()
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_start_worker,
                             initargs=(os.getpid(), events, workers)) as pool:
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


def _start_worker(parent_pid: int, events, workers: int = 1) -> None:
    global _EVENTS
    die_with_parent(parent_pid)
    _EVENTS = events
    share_cores(workers)


def share_cores(workers: int) -> None:
    """This worker's share of the cores for a local model's math: torch takes every core in each
    process, and `workers` processes each doing so ran a 2-arm hf eval on 2 cores ~2x slower than
    one thread each (measured, docs/backends.md). Set before torch is imported (OMP_NUM_THREADS) or after."""
    threads = max(1, (os.cpu_count() or 1) // max(1, workers))
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
    else:
        os.environ.setdefault("OMP_NUM_THREADS", str(threads))


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
    count = {"done": 0, "won": 0.0, "measured": 0, "coerced": 0}

    def on_game(row):
        count["done"] += 1
        count["won"] += 0.0 if row["unmeasured"] else row_mean(row)  # a game of trials: its mean
        count["measured"] += not row["unmeasured"]
        count["coerced"] += row["coerced_actions"]
        live = (f"won {count['won']:g}/{count['measured']} measured, "
                f"{count['done'] - count['measured']} unmeasured, {count['coerced']} coerced")
        progress(arm, phase, count["done"], total, live)

    return on_game
