"""The tokens a process's model calls used, as the endpoints reported them: each chat backend that
make_chat builds counts its replies here, so an eval can record what each arm's calls used
(measured), beside what the cost gate estimated (evals/prices.py). A reply without usage counts
as a call whose tokens are unreported, never as 0 tokens."""

from __future__ import annotations

import copy
import threading

_LOCK = threading.Lock()
_USAGE: dict = {}  # "backend:model" -> {calls, prompt_tokens, completion_tokens, unreported_calls}


class Metered:
    """A chat backend whose replies are counted; everything else is the backend's own."""

    def __init__(self, inner, backend: str):
        self._inner, self._key = inner, f"{backend}:{getattr(inner, 'model', None)}"

    def chat(self, messages, tools=None):
        reply = self._inner.chat(messages, tools=tools)
        record(self._key, reply.prompt_tokens, reply.completion_tokens)
        return reply

    def score(self, messages, continuations, likelihood, prefix=""):
        scored = self._inner.score(messages, continuations, likelihood, prefix)
        record(self._key, scored.tokens_read, scored.tokens_generated)  # mostly read: prompt tokens
        return scored

    def __getattr__(self, name):
        if name.startswith("__") or name in ("_inner", "_key"):  # copy and unpickle look these up before __init__
            raise AttributeError(name)
        return getattr(self._inner, name)


def record(key: str, prompt: int | None, completion: int | None) -> None:
    with _LOCK:
        row = _USAGE.setdefault(key, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "unreported_calls": 0})
        row["calls"] += 1
        if prompt is None or completion is None:
            row["unreported_calls"] += 1
        else:
            row["prompt_tokens"] += prompt
            row["completion_tokens"] += completion


def snapshot() -> dict:
    with _LOCK:
        return copy.deepcopy(_USAGE)


def since(before: dict) -> dict:
    """What this process's calls used after `before` (a snapshot), by backend:model."""
    now = snapshot()
    out = {}
    for key, row in now.items():
        was = before.get(key, {})
        delta = {k: v - was.get(k, 0) for k, v in row.items()}
        if delta["calls"]:
            out[key] = delta
    return out
