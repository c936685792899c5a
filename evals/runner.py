"""Play games: one game with an executor and the skills it retrieves, and one arm over a list
of games, appending one JSONL row per game as it finishes.

A failure of the env or the executor makes the game *unmeasured* (success None + reason), never a
failure: an outage must not look like an effect.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Callable

from skillos.errors import SkillosError
from skillos.evals.backends.chat import SAMPLING_SEED, Draws
from skillos.evals.records import GameRow, row_trials
from skillos.evals.trace import TraceWriter, repo_changes
from skillos.secrets import redact_text
from skillos.evals.trajectory import Step, Trajectory
from skillos.repo import Retriever, SkillRepo
from skillos.files import write_atomic
from skillos import safety

MIN_GAMES_FOR_ABORT = 20  # the error budget is judged after this many games
# The ALFWorld engine (the fast-downward translator, TextWorld's parsers) keeps module-level
# state and is not thread-safe. Games in flight share it one call at a time; what runs
# concurrently is the executor (model calls), which is where the time goes.
ENGINE_LOCK = threading.RLock()


def engine_lock(env):
    """ENGINE_LOCK for an env whose engine runs in this interpreter; nothing for one whose engine
    runs in a process of its own (evals/envs/alfworld/pool.py: `own_process`), whose games then
    run at once."""
    return nullcontext() if getattr(env, "own_process", False) is True else ENGINE_LOCK


class ArmAborted(SkillosError):
    """Too many games of an arm were unmeasured: its results are not reportable. An outage, not
    a mistake in the input: its own exit code (3), so a script can retry it and not edit a config."""

    exit_code = 3


def play(env, executor, retriever: Retriever | None, game, max_steps: int, top_k: int) -> Trajectory:
    traj = Trajectory(game.id, game.task, game.task_type)
    try:
        with engine_lock(env):
            env.load(game.path)
            obs = env.reset()
        traj.intro = obs.text
        hits = retriever.search(env.task or game.task, top_k) if retriever else []
        traj.retrieved = [h.skill.name for h in hits]
        traj.scores = [h.score for h in hits]
        episode = executor.new_episode(env.task or game.task, [h.skill for h in hits])
        for _ in range(max_steps):
            obs = take_action(env, obs, episode.act(obs.text, obs.admissible), traj.steps)
            traj.grading_timeouts += bool(getattr(obs, "grading_timeout", False))  # an env of another shape: none
            traj.unread_answers += bool(getattr(obs, "unread_answer", False))
            if obs.won:
                break
        traj.won = obs.won
        traj.reads = list(getattr(episode, "reads", []))  # a slate executor's read_skill calls
    except Exception as exc:  # noqa: BLE001 - any failure to measure is recorded, not scored
        traj.won = None
        traj.unmeasured_reason = redact_text(f"{type(exc).__name__}: {exc}")[:300]
    return traj


def take_action(env, obs, action: str, steps: list) -> object:
    """One step of a game, shared by `play` and the slate environment: an action that is not
    admissible is counted as coerced and replaced by a harmless command."""
    proposed, admissible = action, len(obs.admissible)
    # An env with no admissible list takes free text (a reasoning answer): nothing to coerce.
    coerced = bool(obs.admissible) and action not in obs.admissible
    if coerced:
        action = "look" if "look" in obs.admissible else obs.admissible[0]
    with engine_lock(env):
        obs = env.step(action)
    steps.append(Step(action, obs.text, coerced, admissible, proposed if coerced else None))
    return obs


def row(arm: str, traj: Trajectory, repo_size: int, phase: str = "eval",
        curation: dict | None = None) -> dict:
    """The JSONL row of one game (evals.records.GameRow, with its schema_version). `curation`:
    what the curator did after it (calls, failed calls, applied and refused operations)."""
    return GameRow(arm=arm, phase=phase, game_id=traj.game_id, task_type=traj.task_type, task=traj.task,
                   success=traj.won, steps=len(traj.steps), coerced_actions=traj.coerced,
                   skills_retrieved=traj.retrieved, repo_size=repo_size, unmeasured=traj.won is None,
                   unmeasured_reason=redact_text(traj.unmeasured_reason), grading_timeouts=traj.grading_timeouts,
                   unread_answers=traj.unread_answers, **(curation or {})).to_dict()


def trials_row(arm: str, plays: list[Trajectory], repo_size: int, phase: str = "eval",
               curation: dict | None = None) -> dict:
    """The row of one game played several times (eval.trials): each play's score in `trials` (1
    won, 0 lost, None unmeasured), steps, coerced actions and grading timeouts summed over them,
    the skills the first play retrieved; unmeasured only when no play was measured, and a play
    that was not measured says why in `unmeasured_reason` even when others were."""
    first = plays[0]
    lost = [t for t in plays if t.won is None]
    reason = next((t.unmeasured_reason for t in lost if t.unmeasured_reason), "no outcome recorded")
    said = (None if not lost else reason if len(lost) == len(plays)
            else f"{len(lost)} of {len(plays)} trials unmeasured: {reason}")
    return GameRow(arm=arm, phase=phase, game_id=first.game_id, task_type=first.task_type, task=first.task,
                   success=None, trials=[None if t.won is None else float(t.won) for t in plays],
                   steps=sum(len(t.steps) for t in plays), coerced_actions=sum(t.coerced for t in plays),
                   skills_retrieved=first.retrieved, repo_size=repo_size, unmeasured_reason=redact_text(said),
                   grading_timeouts=sum(t.grading_timeouts for t in plays),
                   unread_answers=sum(t.unread_answers for t in plays), **(curation or {})).to_dict()


def trial_seed(game_id: str, trial: int) -> int:
    """The sampling seed of one trial of a game: distinct per trial, the same on every machine."""
    return int.from_bytes(hashlib.sha256(f"{game_id}|trial {trial}".encode()).digest()[:4], "big") >> 1


PROGRESS = ".progress.json"  # in a curated repo's folder: how many games it has curated
CURATED = ".curated"  # in a curated repo's folder: the content hash of every game it curated on, a line each


def curation_progress(repo_dir: Path) -> dict:
    """{"curated": n, "state": "idle" | "curating"}; a missing file is a repo that curated nothing.
    A marker that is not one (damaged, a FIFO, the wrong shape) reads as a repo mid-curation, so a
    resume restarts that arm instead of trusting it."""
    path = Path(repo_dir) / PROGRESS
    if not path.exists() and not path.is_symlink():
        return {"curated": 0, "state": "idle"}
    try:
        data = safety.read_json_file(path, "curation progress marker", 1 << 16)
    except SkillosError:
        return {"curated": -1, "state": "damaged"}
    if not isinstance(data.get("curated"), int) or isinstance(data.get("curated"), bool) or \
            data.get("state") not in ("idle", "curating"):
        return {"curated": -1, "state": "damaged"}
    return data


def run_arm(arm: str, games, *, env=None, executor, repo: SkillRepo | None, curator=None,
            retrieval_mode: str, max_steps: int, top_k: int,
            out: Path | None = None, phase: str = "eval",
            on_game: Callable[[dict], None] | None = None,
            max_error_rate: float | None = None, done: dict | None = None,
            make_env: Callable[[], object] | None = None, concurrency: int,
            wave_size: int, trials: int | None = None) -> list[dict]:
    """Play `games`; return their rows in game order.

    Without a curator, up to `concurrency` games play at once (a sliding window; each game gets
    its own env from `make_env`), and each row is appended as its game finishes. With a curator
    the repo is edited after every game (streaming), or after every wave of `wave_size` games
    played on one repo snapshot, curated in game order.

    With `max_error_rate`, the arm aborts (ArmAborted) once at least MIN_GAMES_FOR_ABORT games
    are recorded and more than that share of them are unmeasured: an outage stops the arm instead
    of becoming its result. `done` (game id -> row) are games a resumed run already finished:
    they are not played again. A curated repo on disk carries a progress marker, so a resume
    can tell a repo that finished curating game k from one killed in the middle of it.

    `trials` (eval.trials; None: one play a game) above 1 plays each game that many times on the repo as it stands before the game,
    each play with its own sampling seed (trial_seed, read by the backends through
    SAMPLING_SEED), into one row holding every play's score (trials_row); a curator curates once,
    after the first play."""
    retriever = Retriever(repo, retrieval_mode) if repo is not None else None
    done, results, recorded = done or {}, {}, []
    envs = _EnvPool(env, make_env)
    fh = open(out, "a", encoding="utf-8") if out else None
    traces = TraceWriter.beside(out) if out else None

    def play_once(game) -> Trajectory:
        with envs.lease() as game_env:
            return play(game_env, executor, retriever, game, max_steps, top_k)

    def play_one(game) -> Trajectory | list[Trajectory]:
        if not trials or trials < 2:
            return play_once(game)
        plays = []
        for trial in range(trials):
            token = SAMPLING_SEED.set(Draws(trial_seed(game.id, trial)))  # in this thread: the play's own calls
            try:
                plays.append(play_once(game))
            finally:
                SAMPLING_SEED.reset(token)
        return plays

    def record(index: int, played: Trajectory | list | None, finished: dict | None = None) -> None:
        if finished is None:
            plays = played if isinstance(played, list) else [played]
            curation = None
            if curator is not None and repo is not None:
                curation = _curate(curator, plays[0], repo, getattr(games[index], "content_hash", None))
            size = len(repo) if repo is not None else 0
            finished = (trials_row(arm, plays, size, phase, curation) if isinstance(played, list)
                        else row(arm, played, size, phase, curation))
            if fh:
                fh.write(redact_text(json.dumps(finished)) + "\n")
                fh.flush()
                for trial, traj in enumerate(plays):
                    traces.write(arm, phase, traj, trial if isinstance(played, list) else None)
        results[index] = finished
        recorded.append(finished)
        if on_game:
            on_game(finished)
        _check_error_budget(arm, phase, recorded, max_error_rate)

    try:
        todo = []
        for index, game in enumerate(games):
            if game.id in done:
                record(index, None, done[game.id])
            else:
                todo.append((index, game))
        if curator is None:
            waves = [todo]
        else:
            waves = [todo[k:k + wave_size] for k in range(0, len(todo), max(1, wave_size))]
        for wave in waves:
            if concurrency <= 1 or len(wave) <= 1:
                for index, game in wave:
                    record(index, play_one(game))
            elif curator is None:  # rows recorded as games finish
                asyncio.run(_play_many(wave, play_one, concurrency, record))
            else:  # the wave plays on one snapshot; curation follows in game order
                played = {}
                asyncio.run(_play_many(wave, play_one, concurrency, played.__setitem__))
                for index in sorted(played):
                    record(index, played[index])
    finally:
        if fh:
            fh.close()
    return [results[i] for i in sorted(results)]


async def _play_many(batch, play_one, concurrency: int, on_done) -> None:
    """Play (index, game) pairs with at most `concurrency` at once, in threads (the env and the
    SDK calls are blocking); call on_done(index, trajectory) as each finishes, in this thread."""
    loop = asyncio.get_running_loop()
    slots = asyncio.Semaphore(concurrency)  # games in flight at most
    with ThreadPoolExecutor(concurrency, thread_name_prefix="skillos-game") as pool:
        async def one(index, game):
            async with slots:
                return index, await loop.run_in_executor(pool, play_one, game)

        tasks = [asyncio.ensure_future(one(index, game)) for index, game in batch]
        try:
            for next_done in asyncio.as_completed(tasks):
                on_done(*(await next_done))
        finally:  # an abort: games not yet started never start
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


class _EnvPool:
    """Game envs for concurrent plays: one per game in flight, made on demand, reused."""

    def __init__(self, env, make_env):
        self.make_env = make_env
        self.free: queue.SimpleQueue = queue.SimpleQueue()
        if env is not None:
            self.free.put(env)

    @contextmanager
    def lease(self):
        try:
            env = self.free.get_nowait()
        except queue.Empty:
            if self.make_env is None:
                raise RuntimeError("concurrent games need make_env (one env per game in flight)")
            env = self.make_env()
        try:
            yield env
        finally:
            self.free.put(env)


def _curate(curator, traj, repo: SkillRepo, content_hash: str | None = None) -> dict:
    """Curate after one game, keep what the curator changed on the game's trace, and return its
    counts. A curator that raises (a malformed reply its backend let through, a bug in a plugin)
    is a failed call, counted: never the end of the arm."""
    before = {s.name: s for s in repo.skills}
    marker = repo.root / PROGRESS if repo.root is not None else None
    if marker is not None:
        curated = curation_progress(repo.root)["curated"]
        write_atomic(marker, json.dumps({"curated": curated, "state": "curating"}))
    failed_before = getattr(curator, "unmeasured_calls", 0)
    try:
        results = list(curator.curate(traj, repo) or [])
        raised = 0
    except Exception:  # noqa: BLE001 - counted below as a failed curator call
        results, raised = [], 1
    if marker is not None:
        if content_hash:  # what the repo learned from: a sweep refuses to score it on these games
            with open(repo.root / CURATED, "a", encoding="utf-8") as fh:
                fh.write(content_hash + "\n")
        write_atomic(marker, json.dumps({"curated": curated + 1, "state": "idle"}))
    traj.curation = repo_changes(before, repo)
    applied = sum(bool(getattr(r, "ok", False)) for r in results)
    return {"curator_calls": 1,
            "curator_failed_calls": getattr(curator, "unmeasured_calls", 0) - failed_before + raised,
            "curator_applied_ops": applied, "curator_refused_ops": len(results) - applied}


def _check_error_budget(arm: str, phase: str, rows: list[dict], max_error_rate: float | None) -> None:
    if max_error_rate is None or len(rows) < MIN_GAMES_FOR_ABORT:
        return
    # over plays: a game of trials (eval.trials) counts each of its plays, so an outage that
    # spares one trial of every game is still an outage
    plays = [(r, t is None) for r in rows for t in row_trials(r)]
    lost = [r for r, unmeasured in plays if unmeasured]
    if len(lost) / len(plays) > max_error_rate:
        what = "plays" if len(plays) > len(rows) else "games"
        raise ArmAborted(
            f"arm {arm} aborted in its {phase} games: {len(lost)} of {len(plays)} {what} unmeasured "
            f"({len(lost) / len(plays):.0%} > eval.max_error_rate {max_error_rate:.0%}); last reason: "
            f"{lost[-1]['unmeasured_reason']}. Its results are not reportable.")
