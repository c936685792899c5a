"""What one game produced: the task, each action and what the env said back, the outcome.

`won` is None when the game was not measured (the env or a model failed); `unmeasured_reason`
then says why. A None is never counted as a failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Step:
    action: str
    observation: str
    coerced: bool = False  # the executor's action was not admissible and was replaced
    admissible: int | None = None  # how many commands were admissible when the action was chosen
    proposed: str | None = None  # what the executor typed, when it was coerced


@dataclass
class Trajectory:
    game_id: str
    task: str
    task_type: str
    intro: str = ""
    steps: list[Step] = field(default_factory=list)
    won: bool | None = None
    retrieved: list[str] = field(default_factory=list)  # skill names given to the executor
    unmeasured_reason: str | None = None
    scores: list[float] = field(default_factory=list)  # retrieval score of each retrieved skill
    curation: list[dict] = field(default_factory=list)  # the curator's operations after the game
    reads: list = field(default_factory=list)  # read_skill calls of a slate episode (evals/envs/slate/slates.py)
    grading_timeouts: int = 0  # answers graded wrong because their parse passed the grader's time bound
    unread_answers: int = 0  # replies graded wrong because no final answer could be read from them

    @property
    def coerced(self) -> int:
        return sum(s.coerced for s in self.steps)
