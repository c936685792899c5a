"""The curator: after each game it reads the trajectory and edits the skill repo, only through
the repo's insert / update / delete (each returns success or a one-line reason).

Each environment builds its own (evals/envs/<name>/environment.py: `make_curator`): its
heuristic for the no-model backend, and for every model backend an LLM with the paper's three
tools and the environment's instructions (evals/backends/build.py, llm_curator.py).
"""

from __future__ import annotations

from typing import Protocol

from skillos.evals.trajectory import Trajectory
from skillos.repo import OpResult, SkillRepo


class Curator(Protocol):
    name: str

    def curate(self, trajectory: Trajectory, repo: SkillRepo) -> list[OpResult]:
        """Edit `repo` after one game; one outcome (with `.ok`) per operation attempted."""
