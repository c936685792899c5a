"""The executor: the frozen agent that plays a task given the top-k retrieved skills.

An executor makes one `Episode` per game; the runner feeds it each observation and the
admissible commands and takes one action back. Each environment builds its own
(evals/envs/<name>/environment.py: `make_executor`): its heuristic for the no-model backend, and
for every model backend its model executor through evals/backends/build.py.
"""

from __future__ import annotations

from typing import Protocol, Sequence

from skillos.repo import Skill


class Episode(Protocol):
    def act(self, observation: str, admissible: Sequence[str]) -> str: ...


class Executor(Protocol):
    name: str

    def new_episode(self, task: str, skills: Sequence[Skill]) -> Episode: ...
