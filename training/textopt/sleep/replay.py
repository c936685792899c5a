"""Replay a mined task with a skill through any model backend, and judge the reply by the task's
checks. The skill is in the system prompt the way the Agent Skills spec loads an invoked skill
(its whole SKILL.md), together with `REPLAY_MARKER`, so a transcript of a replay can never be
harvested back.

Every call goes through `Caller`, which holds the night's hard budget: a call that could pass
the call, token or wall-clock cap is not made (`BudgetExhausted`), and `max_consecutive_errors`
failed calls in a row end the night as an outage (`Outage`). A failed call is unmeasured
(None with its reason), never a failed task.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from skillos.evals.backends.chat import BackendError
from skillos.training.textopt.sleep.harvest import REPLAY_MARKER
from skillos.training.textopt.sleep.mine import is_refusal
from skillos.evals.backends.chat import ChatResult
from skillos.evals.judge import parse_verdict

DEFAULT_MAX_TOKENS = 1024  # a completion bound when the config sets none: a token cap needs one


class BudgetExhausted(Exception):
    """The next call could pass a hard cap; the night stops here."""

    def __init__(self, cap: str, detail: str):
        super().__init__(f"{cap} cap reached: {detail}")
        self.cap = cap


class Outage(Exception):
    """Too many model calls failed in a row: the endpoint is down."""


def estimate_tokens(messages: list[dict], max_tokens: int) -> int:
    """A call's worst case before it is made: ~4 characters a prompt token, plus the completion bound."""
    return sum(len(str(m.get("content") or "")) for m in messages) // 4 + 16 + max_tokens


@dataclass
class Budget:
    max_calls: int
    max_tokens: int
    max_minutes: float
    calls: int = 0
    tokens: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def minutes(self) -> float:
        return (time.monotonic() - self.started) / 60

    def reserve(self, worst_tokens: int) -> None:
        if self.calls + 1 > self.max_calls:
            raise BudgetExhausted("calls", f"{self.calls} of {self.max_calls} model calls made")
        if self.tokens + worst_tokens > self.max_tokens:
            raise BudgetExhausted("tokens", f"{self.tokens} of {self.max_tokens} tokens used; the next call "
                                            f"could use {worst_tokens}")
        if self.minutes >= self.max_minutes:
            raise BudgetExhausted("minutes", f"{self.minutes:.1f} of {self.max_minutes:g} wall minutes")
        self.calls += 1
        self.tokens += worst_tokens  # held until the reply says what was used

    def settle(self, worst_tokens: int, used: int | None) -> None:
        if used is not None:
            self.tokens += min(used, worst_tokens) - worst_tokens

    def to_dict(self) -> dict:
        return {"calls": self.calls, "max_calls": self.max_calls, "tokens": self.tokens,
                "max_tokens": self.max_tokens, "minutes": round(self.minutes, 3), "max_minutes": self.max_minutes}


class Caller:
    """Model calls under the night's budget, counting failures."""

    def __init__(self, budget: Budget, max_consecutive_errors: int):
        self.budget, self.max_consecutive = budget, max_consecutive_errors
        self.errors: list[str] = []
        self._in_a_row = 0

    def call(self, chat, messages, max_tokens: int, tools=None):
        """The reply, or None when the call failed (after the SDK's own retries)."""
        worst = estimate_tokens(messages, max_tokens)
        self.budget.reserve(worst)
        try:
            reply = chat.chat(messages, tools=tools)
        except BackendError as exc:
            self.budget.settle(worst, None)
            self.errors.append(str(exc)[:300])
            self._in_a_row += 1
            if self._in_a_row >= self.max_consecutive:
                raise Outage(f"{self._in_a_row} model calls failed in a row (last: {str(exc)[:200]})") from None
            return None
        self._in_a_row = 0
        used = None if reply.prompt_tokens is None else reply.prompt_tokens + (reply.completion_tokens or 0)
        self.budget.settle(worst, used)
        return reply


def system_prompt(skill_markdown: str, skill_name: str) -> str:
    return (f"{REPLAY_MARKER} This is an offline replay by skillos sleep; it is not a user session.\n"
            f"The user's request invoked the skill {skill_name!r}; its SKILL.md is loaded below. "
            f"Follow it.\n\n<skill name=\"{skill_name}\">\n{skill_markdown}\n</skill>")


JUDGE_PROMPT = ("You check whether an assistant's answer meets a rubric. Answer only with JSON: "
                '{{"verdict": "VALID" or "INVALID", "reason": "<one sentence>"}}.\n\n'
                "Rubric: {rubric}\n\nRequest: {prompt}\n\nAnswer:\n{answer}")


@dataclass
class Outcome:
    success: bool | None
    reason: str = ""  # why it failed, or why it is unmeasured

    def to_dict(self) -> dict:
        return {"success": self.success, "reason": self.reason}


def rule_passes(check: dict, text: str, tool_calls: list) -> bool:
    rule = check["rule"]
    if rule == "contains":
        return check["value"].lower() in text.lower()
    if rule == "not_contains":
        return check["value"].lower() not in text.lower()
    if rule == "regex":
        return re.search(check["value"], text) is not None
    if rule == "section":
        return re.search(rf"^#{{1,6}}\s*{re.escape(check['value'])}\s*$", text, re.M | re.I) is not None
    if rule == "length":
        unit = check.get("unit", "chars")
        size = len(text.split()) if unit == "words" else len(text.splitlines()) if unit == "lines" else len(text)
        return (check.get("min") is None or size >= check["min"]) and (check.get("max") is None or size <= check["max"])
    if rule == "tool":
        return any(c.get("name") == check["name"] for c in tool_calls)
    if rule == "no_refusal":
        return not is_refusal(text)
    raise ValueError(f"not a rule: {rule}")


def _tools_for(checks: list) -> list | None:
    """A task that checks a named tool offers that tool, with any arguments."""
    names = [c["name"] for c in checks if c["rule"] == "tool"]
    return [{"type": "function", "function": {"name": n, "description": f"the {n} tool",
                                              "parameters": {"type": "object", "properties": {}}}}
            for n in names] or None


class Replayer:
    def __init__(self, caller: Caller, chat, max_tokens: int, judge=None, judge_max_tokens: int = 256):
        self.caller, self.chat, self.max_tokens = caller, chat, max_tokens
        self.judge, self.judge_max_tokens = judge, judge_max_tokens

    def run(self, task, skill_markdown: str, skill_name: str) -> Outcome:
        messages = [{"role": "system", "content": system_prompt(skill_markdown, skill_name)},
                    {"role": "user", "content": task.prompt}]
        reply = self.caller.call(self.chat, messages, self.max_tokens, tools=_tools_for(task.checks))
        if reply is None:
            return Outcome(None, f"model call failed: {self.caller.errors[-1]}")
        failed = []
        for check in task.checks:
            if check["rule"] == "rubric":
                verdict = self._rubric(check["rubric"], task.prompt, reply.text)
                if verdict is None:
                    return Outcome(None, "rubric unjudged (no judge configured, or its call or reply failed)")
                ok = verdict
            else:
                ok = rule_passes(check, reply.text, reply.tool_calls)
            if not ok:
                failed.append(check["rule"] + (f" {check.get('value') or check.get('name') or ''}".rstrip()))
        return Outcome(not failed, "failed: " + "; ".join(failed) if failed else "")

    def _rubric(self, rubric: str, prompt: str, answer: str) -> bool | None:
        if self.judge is None:
            return None

        messages = [{"role": "user", "content": JUDGE_PROMPT.format(rubric=rubric, prompt=prompt, answer=answer)}]
        reply = self.caller.call(self.judge, messages, self.judge_max_tokens)
        return None if reply is None else parse_verdict(reply.text)


OFFLINE_WRITER = "skill-follower"  # sleep.model {backend: heuristic, model: skill-follower}


class SkillFollower:
    """The no-model writer of the shipped offline example (`sleep.model: {backend: heuristic,
    model: skill-follower}`): it answers every request with a short generic reply and does exactly
    what the loaded skill's lines say, in the shapes the heuristic proposer writes them (include
    `X`, a `## X` section, use the `X` tool, keep within N words). A skill that says nothing useful
    leaves its answers failing their checks; one that learned the right lines passes them. It shows
    the loop (replay, gate, stage) offline and in seconds; it says nothing about a model."""

    model = OFFLINE_WRITER
    _INCLUDE = re.compile(r"include `([^`]+)` in the answer", re.I)
    _SECTION = re.compile(r"include a `#+\s*([^`]+)` section", re.I)
    _TOOL = re.compile(r"use the `([^`]+)` tool", re.I)
    _WITHIN = re.compile(r"keep the answer within (\d+)-(\d+|any) (words|lines|chars)", re.I)

    def chat(self, messages: list[dict], tools: list[dict] | None = None):
        skill = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
        request = messages[-1]["content"] if messages else ""
        lines = [f"Done: {request.strip().splitlines()[0][:80] if request.strip() else 'the request'}."]
        lines += [m.group(1) for m in self._INCLUDE.finditer(skill)]
        for m in self._SECTION.finditer(skill):
            lines += [f"## {m.group(1).strip()}", "- see above"]
        calls = [{"name": m.group(1), "arguments": {}} for m in self._TOOL.finditer(skill)
                 if tools and any(t["function"]["name"] == m.group(1) for t in tools)]
        text = "\n".join(lines)
        within = self._WITHIN.search(skill)
        if within and within.group(2) != "any" and within.group(3).lower() == "words":
            text = " ".join(text.split()[:int(within.group(2))])
        words = len(" ".join(m["content"] for m in messages).split())
        return ChatResult(text, calls, prompt_tokens=words, completion_tokens=len(text.split()))
