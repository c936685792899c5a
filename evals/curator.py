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


def make_curator(config, horizon: int | None = None, system: str | None = None) -> Curator:
    """A curator from the config's `curator` section; `horizon` is the |G| a trained curator saw;
    `system`: a model curator's instructions for the environment (default: the household's)."""
    if config.backend == "heuristic":
        from skillos.evals.envs.household.heuristic import HeuristicCurator

        return HeuristicCurator()
    from skillos.registry import MODEL_BACKENDS

    if config.backend in MODEL_BACKENDS:
        from skillos.evals.backends.llm_curator import LLMCurator

        return LLMCurator(config, horizon, system)
    raise SkillosError(f"curator.backend {config.backend!r} is not a backend; "
                       f"use heuristic or one of {', '.join(MODEL_BACKENDS)}")
