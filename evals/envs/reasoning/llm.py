"""The LLM executor on reasoning, in the SkillOS paper's reasoning prompt shape: one turn, the
past relevant skills (top-k retrieved), the problem, chain-of-thought, and the final answer in
\\boxed{} (a letter for multiple choice). The whole reply goes to the grader; a failed model
call raises BackendError and the runner records the problem as unmeasured."""

from __future__ import annotations

from typing import Sequence

from skillos.evals.backends.chat import make_chat
from skillos.repo import Skill

SYSTEM = ("You are a careful problem solver. Think step by step, then give the final answer "
          "inside \\boxed{}.")
CHOICE_HINT = "This is multiple choice: end with \"The answer is (X)\" where X is one of A, B, C, D."


def prompt(problem: str, skills: Sequence[Skill]) -> str:
    shown = "\n\n".join(f"## {s.name}\n{s.description}\n{s.body}".strip() for s in skills)
    lines = ["Past relevant skills:", shown or "(none)", "", "Problem:", problem.strip(), ""]
    if "\n(A) " in problem:
        lines.append(CHOICE_HINT)
    lines.append("Reason step by step, and put your final answer within \\boxed{}.")
    return "\n".join(lines)


class LLMReasoner:
    def __init__(self, config):
        self.config = config
        self.chat = make_chat(config)
        self.name = f"{config.backend}:{config.model}"

    def new_episode(self, task: str, skills: Sequence[Skill]) -> "LLMReasonerEpisode":
        return LLMReasonerEpisode(self, task, skills)


class LLMReasonerEpisode:
    def __init__(self, executor: LLMReasoner, task: str, skills: Sequence[Skill]):
        self.executor, self.task, self.skills = executor, task, list(skills)

    def act(self, observation: str, admissible: Sequence[str] = ()) -> str:
        messages = [{"role": "system", "content": SYSTEM},
                    {"role": "user", "content": prompt(observation or self.task, self.skills)}]
        return self.executor.chat.chat(messages).text or ""
