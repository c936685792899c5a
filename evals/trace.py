"""The full record of each game, beside its row: what `skillos view` and `skillos export inspect`
show when a person opens one episode.

games.jsonl keeps one short row per game (what reports and resumes read); trajectories.jsonl
keeps, per game, the intro, every step (action, observation, how many commands were
admissible, whether the action was coerced and what the executor typed), the retrieved skills
with their scores, and the curator's operations after the game (each changed skill's new
SKILL.md, so a repo's history can be replayed game by game).

Arms may run in separate processes appending to the same file: each line is written with a
single os.write on an O_APPEND descriptor, so lines never interleave.
"""

from __future__ import annotations

import json
from pathlib import Path

from skillos.evals.run_folder import TRACES
from skillos.evals.trajectory import Trajectory
from skillos.files import append_bytes
from skillos.secrets import redact_text
from skillos import safety
from skillos.files import write_atomic


def repo_changes(before: dict, repo) -> list[dict]:
    """The operations that turned `before` (name -> Skill) into `repo`: insert, update, delete,
    each with the skill's SKILL.md after the operation (None for a delete)."""
    after = {s.name: s for s in repo.skills}
    ops = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old is new or (old is not None and new is not None and old.to_markdown() == new.to_markdown()):
            continue
        op = "insert" if old is None else "delete" if new is None else "update"
        ops.append({"op": op, "skill": name, "markdown": new.to_markdown() if new else None})
    return ops


def trace_row(arm: str, phase: str, traj: Trajectory) -> dict:
    return {
        "arm": arm, "phase": phase, "game_id": traj.game_id, "task": traj.task,
        "task_type": traj.task_type, "intro": traj.intro, "success": traj.won,
        "unmeasured_reason": traj.unmeasured_reason,
        "retrieved": [{"skill": name, "score": score}
                      for name, score in zip(traj.retrieved, traj.scores or [None] * len(traj.retrieved))],
        "steps": [{"action": s.action, "observation": s.observation, "admissible": s.admissible,
                   "coerced": s.coerced, "proposed": s.proposed} for s in traj.steps],
        "curation": traj.curation,
    }


def damage(trace: dict) -> str | None:
    """What is wrong with a trace row's shape (None: nothing): a reader trusts no row that fails."""
    def text(v):
        return v is None or isinstance(v, str)

    for key in ("arm", "phase", "game_id"):
        if not isinstance(trace.get(key), str):
            return f"{key} is {trace.get(key)!r}"
    if trace.get("success") not in (True, False, None):
        return f"success is {trace.get('success')!r}"
    for key in ("task", "intro", "unmeasured_reason", "task_type"):
        if not text(trace.get(key)):
            return f"{key} is not text"
    for key, fields in (("steps", {"action": str, "observation": str}), ("retrieved", {"skill": str}),
                        ("curation", {})):
        items = trace.get(key, [])
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            return f"{key} is not a list of objects"
        for i in items:
            for name, kind in fields.items():
                if not isinstance(i.get(name), kind):
                    return f"a {key} entry's {name} is {i.get(name)!r}"
            if key == "retrieved" and i.get("score") is not None and (
                    isinstance(i["score"], bool) or not isinstance(i["score"], (int, float))):
                return f"a retrieved score is {i['score']!r}"
    return None


def prune(path: Path, keep: set) -> None:
    """Keep the traces of the games in `keep` ((arm, phase, game_id)), the last of each: what a
    resume does, so a restarted arm's old games and a line cut off by a kill do not linger."""
    path = Path(path)
    if not path.exists():
        return

    kept = {}
    # a line cut off by a kill (or damaged) is dropped: its game is played again
    for _, line, trace in safety.jsonl_records(path, "trajectory file"):
        game = (trace.get("arm"), trace.get("phase"), trace.get("game_id"))
        if game in keep:
            kept[(*game, trace.get("trial"))] = line  # each trial of a game (eval.trials) its own
    write_atomic(path, "".join(line + "\n" for line in kept.values()))


class TraceWriter:
    def __init__(self, path: Path):
        self.path = Path(path)

    @classmethod
    def beside(cls, rows: Path) -> "TraceWriter":
        """The writer of the run folder that holds the rows file `rows` (its TRACES file)."""
        return cls(Path(rows).with_name(TRACES))

    def write(self, arm: str, phase: str, traj: Trajectory, trial: int | None = None) -> None:
        """One game's trace; `trial`: which play of it (eval.trials above 1), else None."""
        row = trace_row(arm, phase, traj) | ({"trial": trial} if trial is not None else {})
        data = (redact_text(json.dumps(row)) + "\n").encode("utf-8")  # no key in any file
        append_bytes(self.path, data)
