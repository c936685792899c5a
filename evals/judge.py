"""The judge: a binary verdict on a skill's content (r_cnt in the curator's reward).

It answers JSON {"verdict": "VALID" | "INVALID", "reason": ...}. A reply that does not parse, or
a call that fails, is unmeasured (None) and is dropped from r_cnt, never scored as INVALID."""

from __future__ import annotations

import json
import re

from skillos.evals.backends.chat import BackendError, make_chat

PROMPT = ("You judge skills written for a household text-game agent. A skill is VALID if it is "
          "correct, specific and actionable for the tasks it describes, and INVALID otherwise. "
          'Answer only with JSON: {"verdict": "VALID" or "INVALID", "reason": "<one sentence>"}.'
          "\n\nSkill:\n")
OBJECT = re.compile(r"\{.*?\}", re.DOTALL)


def parse_verdict(text: str) -> bool | None:
    for candidate in OBJECT.findall(text or ""):
        try:
            verdict = str(json.loads(candidate).get("verdict", "")).strip().upper()
        except (ValueError, AttributeError):
            continue
        if verdict in ("VALID", "INVALID"):
            return verdict == "VALID"
    return None


class LLMJudge:
    def __init__(self, config):
        self.chat = make_chat(config)

    def judge(self, content: str) -> bool | None:
        try:
            reply = self.chat.chat([{"role": "user", "content": PROMPT + content}])
        except BackendError:
            return None
        return parse_verdict(reply.text)


def make_judge(config) -> LLMJudge | None:
    """The judge of a config's `judge` section; None when no judge is configured."""
    return None if config.backend is None else LLMJudge(config)
