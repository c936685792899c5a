"""The slate environment behind the environment protocol (envs/registry.py): the household's
games (the same tasks, engine and curator), played by an executor that is shown a slate's names
and descriptions and reads with read_skill (executor.py). The heuristic executor is the
household's: it is handed every skill of the slate and chooses none, so it makes no selection to
measure (slates.py: NO_SELECTION). `skillos slate eval` and the selector trainer build their
game env and executors here."""

from __future__ import annotations

from skillos.evals.backends import build
from skillos.evals.envs.household.environment import Household


class SlateEnvironment(Household):
    name = "slate"
    reference = "skillgate/alfworld"  # the selector configs' table (gates/references/skillgate.yaml)
    history_unused = "the slate executor (SkillGate) keeps its whole conversation"

    def make_executor(self, config):
        from skillos.evals.envs.household.heuristic import HeuristicExecutor
        from skillos.evals.envs.slate.executor import SlateExecutor

        return build.executor(config, HeuristicExecutor, SlateExecutor)

    def describe(self, cfg, split: str) -> str:
        return f"{super().describe(cfg, split)} with skill slates"


SLATE = SlateEnvironment()
