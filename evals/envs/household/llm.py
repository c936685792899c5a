"""The LLM executor for ALFWorld, with the SkillOS paper's prompt shape: the task, the past
relevant skills (top-k retrieved), the step count, the last `history_length` action /
observation pairs, the admissible actions, and the answer inside <action>...</action>.

Parsing: exact -> case-insensitive -> an admissible action quoted in the text; otherwise one
deterministic reformat retry that lists the admissible actions; only then the raw answer goes
back to the runner, which counts it as a coerced action (the reference measured 2.1% -> 7-9%
coercion with skills, and 0.09% after a reformat retry). A failed model call raises
BackendError and the runner records the game as unmeasured.
"""

from __future__ import annotations

import re
from typing import Sequence

from skillos.config.backend import decoding_of
from skillos.evals.backends.chat import BackendError, make_chat
from skillos.repo import Skill

SYSTEM = ("You are an agent in a household text game. Each turn, choose exactly one action from "
          "the admissible actions and answer with it inside <action></action>.")
ACTION_OPEN, ACTION_CLOSE = "<action>", "</action>"
ACTION = re.compile(r"<action>(.*?)</action>", re.IGNORECASE | re.DOTALL)


class EmptyReply(BackendError):
    """An executor turn with no content, even after the reformat retry: unmeasured."""


def parse_action(text: str, admissible: Sequence[str]) -> str | None:
    """The admissible action a reply names, or None."""
    found = ACTION.findall(text or "")
    candidate = found[-1].strip() if found else (text or "").strip()
    if candidate in admissible:
        return candidate
    lowered = {a.lower(): a for a in admissible}
    if candidate.lower() in lowered:
        return lowered[candidate.lower()]
    body = (text or "").lower()
    for action in sorted(admissible, key=len, reverse=True):  # the longest quoted action wins
        if re.search(rf"(?<![\w]){re.escape(action.lower())}(?![\w])", body):
            return action
    return None


class LLMExecutor:
    decodings = ("generate", "admissible")  # executor.decoding values it plays (evals/backends/build.py)

    def __init__(self, config):
        self.config = config
        self.chat = make_chat(config)
        self.name = f"{config.backend}:{config.model}"

    def new_episode(self, task: str, skills: Sequence[Skill]) -> "LLMEpisode":
        return LLMEpisode(self, task, skills)


class LLMEpisode:
    def __init__(self, executor: LLMExecutor, task: str, skills: Sequence[Skill]):
        self.executor, self.task, self.skills = executor, task, list(skills)
        self.history: list[tuple[str, str]] = []  # (action, observation that followed)
        self.last_observation = ""
        self.steps = 0
        self.reformats = 0

    def prompt(self, observation: str, admissible: Sequence[str]) -> str:
        n = self.executor.config.history_length
        shown = self.history[-n:] if n else []
        skills = "\n\n".join(f"## {s.name}\n{s.description}\n{s.body}".strip() for s in self.skills)
        lines = [f"Your task is to: {self.task}", "", "Past relevant skills:",
                 skills or "(none)", "", f"Step {self.steps + 1}."]
        if shown:
            lines += ["", f"Your last {len(shown)} actions and what followed:"]
            lines += [f"> {a}\n{o.strip()}" for a, o in shown]
        lines += ["", "Current observation:", observation.strip(), "",
                  "Admissible actions:", *admissible, "",
                  "Answer with one admissible action inside <action></action>."]
        return "\n".join(lines)

    def act(self, observation: str, admissible: Sequence[str]) -> str:
        if self.history:  # the observation that followed the previous action
            self.history[-1] = (self.history[-1][0], observation)
        messages = [{"role": "system", "content": SYSTEM},
                    {"role": "user", "content": self.prompt(observation, admissible)}]
        if decoding_of(self.executor.config) == "admissible":
            return self._choose(messages, list(admissible))
        reply = self.executor.chat.chat(messages).text
        action = parse_action(reply, admissible)
        if action is None:  # one deterministic reformat retry
            self.reformats += 1
            messages += [{"role": "assistant", "content": reply},
                         {"role": "user", "content": "That is not one of the admissible actions. "
                          "Reply with exactly one of these, inside <action></action>:\n"
                          + "\n".join(admissible)}]
            reply = self.executor.chat.chat(messages).text
            action = parse_action(reply, admissible)
            if action is None and not (reply or "").strip():
                # Nothing to score: e.g. reasoning spent all of max_tokens. The game is
                # unmeasured (the runner records this reason), not a string of coerced failures.
                raise EmptyReply("the executor returned no content after the reformat retry "
                                 "(reasoning may have used all of max_tokens; raise executor.max_tokens)")
        self.steps += 1
        chosen = action if action is not None else (reply or "").strip()[:200]
        self.history.append((chosen, ""))
        return chosen  # not admissible: the runner counts it as coerced

    def _choose(self, messages: list[dict], admissible: list[str]) -> str:
        """executor.decoding admissible: the most likely admissible action as the reply the prompt
        asks for (`<action>X</action>`), ties to the first listed; never coerced."""
        if not admissible:
            raise BackendError("no admissible action to choose from")
        scores = self.executor.chat.score(messages, [f"{a}{ACTION_CLOSE}" for a in admissible],
                                          self.executor.config.likelihood, prefix=ACTION_OPEN).values
        chosen = admissible[max(range(len(admissible)), key=lambda i: (scores[i], -i))]
        self.steps += 1
        self.history.append((chosen, ""))
        return chosen
