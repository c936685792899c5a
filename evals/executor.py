"""The executor: the frozen agent that plays a task given the top-k retrieved skills.

An executor makes one `Episode` per game; the runner feeds it each observation and the
admissible commands and takes one action back. Backends: `heuristic` (no model), and every model backend
(openai, anthropic, vllm, hf) through evals/backends/llm_executor.py.
"""

from __future__ import annotations

from typing import Protocol, Sequence

from skillos.errors import SkillosError
from skillos.repo import Skill


class Episode(Protocol):
    def act(self, observation: str, admissible: Sequence[str]) -> str: ...


class Executor(Protocol):
    name: str

    def new_episode(self, task: str, skills: Sequence[Skill]) -> Episode: ...


def make_executor(config) -> Executor:
    """An executor from the config's `executor` section."""
    if config.backend == "heuristic":
        from skillos.evals.envs.household.heuristic import HeuristicExecutor

        return HeuristicExecutor()
    from skillos.registry import MODEL_BACKENDS

    if config.backend in MODEL_BACKENDS:
        from skillos.evals.backends.llm_executor import LLMExecutor

        return LLMExecutor(config)
    raise SkillosError(f"executor.backend {config.backend!r} is not a backend; "
                       f"use heuristic or one of {', '.join(MODEL_BACKENDS)}")
