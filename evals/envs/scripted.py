"""A stand-in game with no engine: where what is measured is the toolkit's plumbing (the gates'
dry-run sentinels, the runner's throughput), not ALFWorld. It has the env interface the runner
plays (load / reset / step, `task`) and games that look like ALFWorld's to the runner."""

from __future__ import annotations

from dataclasses import dataclass

from skillos.evals.envs.registry import Observation


@dataclass(frozen=True)
class ScriptedGame:
    id: str
    path: str = ""  # "missing": load fails, as a lost game file would
    task_type: str = "pick_and_place_simple"
    task: str = "put a clean mug in the coffeemachine"


class ScriptedEnv:
    """One room. `win_action` wins (None: nothing does, every game runs to max_steps)."""

    task = ""

    def __init__(self, admissible: tuple = ("look", "take mug"), win_action: str | None = "take mug"):
        self.admissible, self.win_action = admissible, win_action

    def load(self, path):
        if path == "missing":
            raise FileNotFoundError("game file missing")

    def reset(self):
        self.task = ScriptedGame.task
        return Observation(f"You are in a kitchen. Your task is to: {ScriptedGame.task}.",
                           self.admissible, False)

    def step(self, action):
        return Observation("Time passes.", self.admissible, action == self.win_action)
