"""Play games: one game with an executor and the skills it retrieves, and one arm over a list
of games, appending one JSONL row per game as it finishes.

A failure of the env or the executor makes the game *unmeasured* (success None + reason), never a
failure: an outage must not look like an effect.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from skillos.errors import SkillosError
from skillos.evals.trajectory import Step, Trajectory
from skillos.repo import Retriever, SkillRepo
from skillos.repo.store import write_atomic

MIN_GAMES_FOR_ABORT = 20  # the error budget is judged after this many games


class ArmAborted(SkillosError):
    """Too many games of an arm were unmeasured: its results are not reportable."""


def play(env, executor, retriever: Retriever | None, game, max_steps: int, top_k: int) -> Trajectory:
    traj = Trajectory(game.id, game.task, game.task_type)
    try:
        env.load(game.path)
        obs = env.reset()
        traj.intro = obs.text
        hits = retriever.search(env.task or game.task, top_k) if retriever else []
        traj.retrieved = [h.skill.name for h in hits]
        episode = executor.new_episode(env.task or game.task, [h.skill for h in hits])
        for _ in range(max_steps):
            action = episode.act(obs.text, obs.admissible)
            coerced = action not in obs.admissible
            if coerced:  # counted, and replaced by a harmless command
                action = "look" if "look" in obs.admissible else obs.admissible[0]
            obs = env.step(action)
            traj.steps.append(Step(action, obs.text, coerced))
            if obs.won:
                break
        traj.won = obs.won
    except Exception as exc:  # noqa: BLE001 - any failure to measure is recorded, not scored
        traj.won = None
        traj.unmeasured_reason = f"{type(exc).__name__}: {exc}"[:300]
    return traj


def row(arm: str, traj: Trajectory, repo_size: int, phase: str = "eval") -> dict:
    return {
        "arm": arm,
        "phase": phase,
        "game_id": traj.game_id,
        "task_type": traj.task_type,
        "task": traj.task,
        "success": traj.won,
        "steps": len(traj.steps),
        "coerced_actions": traj.coerced,
        "skills_retrieved": traj.retrieved,
        "repo_size": repo_size,
        "unmeasured": traj.won is None,
        "unmeasured_reason": traj.unmeasured_reason,
    }


PROGRESS = ".progress.json"  # in a curated repo's folder: how many games it has curated


def curation_progress(repo_dir: Path) -> dict:
    """{"curated": n, "state": "idle" | "curating"}; a missing file is a repo that curated nothing."""
    try:
        return json.loads((Path(repo_dir) / PROGRESS).read_text())
    except (OSError, ValueError):
        return {"curated": 0, "state": "idle"}


def run_arm(arm: str, games, *, env, executor, repo: SkillRepo | None, curator=None,
            retrieval_mode: str = "bm25", max_steps: int = 30, top_k: int = 5,
            out: Path | None = None, phase: str = "eval",
            on_game: Callable[[dict], None] | None = None,
            max_error_rate: float | None = None, done: dict | None = None) -> list[dict]:
    """Play `games` in order. With a curator, the repo is edited after every game (streaming).

    With `max_error_rate`, the arm aborts (ArmAborted) once at least MIN_GAMES_FOR_ABORT games
    are played and more than that share of them are unmeasured: an outage stops the arm instead
    of becoming its result. `done` (game id -> row) are games a resumed run already finished:
    they are not played again. A curated repo on disk carries a progress marker, so a resume
    can tell a repo that finished curating game k from one killed in the middle of it."""
    retriever = Retriever(repo, retrieval_mode) if repo is not None else None
    rows, done = [], done or {}
    fh = open(out, "a", encoding="utf-8") if out else None
    try:
        for game in games:
            if game.id in done:
                rows.append(done[game.id])
                if on_game:
                    on_game(done[game.id])
                continue
            traj = play(env, executor, retriever, game, max_steps, top_k)
            if curator is not None and repo is not None:
                _curate(curator, traj, repo)
            record = row(arm, traj, len(repo) if repo is not None else 0, phase)
            rows.append(record)
            if fh:
                fh.write(json.dumps(record) + "\n")
                fh.flush()
            if on_game:
                on_game(record)
            _check_error_budget(arm, phase, rows, max_error_rate)
    finally:
        if fh:
            fh.close()
    return rows


def _curate(curator, traj, repo: SkillRepo) -> None:
    if repo.root is None:
        curator.curate(traj, repo)
        return
    marker = repo.root / PROGRESS
    curated = curation_progress(repo.root)["curated"]
    repo.root.mkdir(parents=True, exist_ok=True)
    write_atomic(marker, json.dumps({"curated": curated, "state": "curating"}))
    curator.curate(traj, repo)
    write_atomic(marker, json.dumps({"curated": curated + 1, "state": "idle"}))


def _check_error_budget(arm: str, phase: str, rows: list[dict], max_error_rate: float | None) -> None:
    if max_error_rate is None or len(rows) < MIN_GAMES_FOR_ABORT:
        return
    lost = [r for r in rows if r["unmeasured"]]
    if len(lost) / len(rows) > max_error_rate:
        raise ArmAborted(
            f"arm {arm} aborted in its {phase} games: {len(lost)} of {len(rows)} games unmeasured "
            f"({len(lost) / len(rows):.0%} > eval.max_error_rate {max_error_rate:.0%}); last reason: "
            f"{lost[-1]['unmeasured_reason']}. Its results are not reportable.")
