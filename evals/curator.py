"""The curator: after each game it reads the trajectory and edits the skill repo, only through
the repo's insert / update / delete (each returns success or a one-line reason).

Backends: `heuristic` (no model), and `openai` / `anthropic` (an LLM with the paper's three
tools, evals/backends/llm_curator.py).
"""

from __future__ import annotations

from typing import Protocol

from skillos.evals.trajectory import Trajectory
from skillos.errors import SkillosError
from skillos.repo import OpResult, SkillRepo


class Curator(Protocol):
    name: str

    def curate(self, trajectory: Trajectory, repo: SkillRepo) -> list[OpResult]:
        """Edit `repo` after one game; one outcome (with `.ok`) per operation attempted."""


def make_curator(config) -> Curator:
    if config.backend == "heuristic":
        from skillos.evals.backends.heuristic import HeuristicCurator

        return HeuristicCurator()
    if config.backend in ("openai", "anthropic"):
        from skillos.evals.backends.llm_curator import LLMCurator

        return LLMCurator(config)
    raise SkillosError(f"curator.backend {config.backend!r} is not available in this version; "
                       "use heuristic, openai or anthropic")
