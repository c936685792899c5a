"""One small interface for every model backend: `chat(messages, tools)` -> `ChatResult`.

Messages are OpenAI-style dicts ({"role": "system" | "user" | "assistant", "content": str}).
A backend retries 429 / 5xx / timeouts with the SDK's own backoff (`max_retries`), then raises
`BackendError`: the caller records the game as unmeasured, never as a failure. API keys come
only from the environment variable the config names.
"""

from __future__ import annotations

import json
import os
import re
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol

from skillos.errors import SkillosError
from skillos.registry import BACKENDS, key_env, load, model_backends
from skillos.config.backend import API_EFFORTS, BackendConfig, decoding_problem
from skillos.evals.backends.usage import Metered
from skillos.secrets import protect_key_vars

_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
_THINK = re.compile(r"<think>(.*?)</think>", re.S)


class BackendError(Exception):
    """A model call failed after the SDK's retries (outage, timeout, bad reply)."""


@dataclass
class ChatResult:
    text: str
    tool_calls: list = field(default_factory=list)  # [{"name": str, "arguments": dict}]
    reasoning: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class ChatBackend(Protocol):
    """A model backend's class. Its module also defines `sent(config)` (see `sent` below), and
    its BACKENDS entry (skillos/registry.py) names the class."""

    model: str

    def chat(self, messages: list[dict], tools: list[dict] | None = None) -> ChatResult: ...


def api_key(config) -> str:
    name = key_env(config)
    key = os.environ.get(name, "") if name else ""

    protect_key_vars([name])  # whatever the endpoint echoes back, this value never leaves
    if not key:
        raise SkillosError(f"{config.backend} backend needs an API key in ${name} "
                           "(keys are read from the environment only)")
    return key


def make_chat(config) -> ChatBackend:
    """A chat backend from an executor / curator / judge config section."""
    if not config.model:
        raise SkillosError(f"backend {config.backend!r} needs a model name (model: ...)")

    problem = decoding_problem(config.backend, config)  # a section built in code skipped the config's check
    if problem:
        raise SkillosError(problem)
    if config.backend not in model_backends():
        raise SkillosError(f"backend {config.backend!r} has no chat model; use one of {', '.join(model_backends())}")

    return Metered(load(BACKENDS[config.backend].chat)(config), config.backend)  # its module imported only now


@dataclass
class Draws:
    """One play's sampling seeds: each of its model calls takes the next (`next()`), so a turn
    does not repeat the draws of the turn before, and the play repeats exactly from its seed."""

    seed: int
    calls: int = 0

    def next(self) -> int:
        self.calls += 1
        return (self.seed + self.calls - 1) % (1 << 31)


# The draws of the play in this context: a trial of a held-out game sets them (evals/runner.py),
# and a backend that seeds (registry Backend.seeds) seeds each sampled call with the next (hf:
# torch's generator before the generation; openai-compatible: the request's `seed`). None: the
# backend's own randomness.
SAMPLING_SEED: ContextVar = ContextVar("skillos_sampling_seed", default=None)


def sent(config) -> dict:
    """What a backend's request or sampling call receives from a config section, built by the
    same functions the call uses, without sending anything or loading a model: decoding key ->
    (where it arrives, the value that arrives, in the config's terms). Empty for heuristic."""
    import importlib

    if config.backend not in model_backends():
        return {}
    module = BACKENDS[config.backend].chat.partition(":")[0]  # the `sent` beside the backend's class
    return importlib.import_module(module).sent(config)


def scored_sent(out: dict, config, chosen: str, logprobs: str) -> dict:
    """`sent` of an executor section with admissible decoding: nothing is generated or sampled, so
    the sampler keys arrive nowhere; `chosen` is where the choice is made, `logprobs` what the
    likelihood is taken over."""
    out.update({key: (f"{chosen} (nothing sampled)", None) for key in ("temperature", "top_p", "top_k", "max_tokens")})
    out["decoding"] = (chosen, "admissible")
    out["likelihood"] = (f"{chosen.partition('(')[0]}(likelihood=): "
                         + ("per-token mean" if config.likelihood == "mean" else "sum") + f" of {logprobs}",
                         config.likelihood)
    return out


def parse_generated(text: str) -> ChatResult:
    """Raw text a local model generated -> content, tool calls and reasoning (the Qwen/Hermes
    format: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, `<think>...</think>`).
    A block that is not JSON becomes a call named "_unparsed", which the curator counts as an
    invalid operation rather than dropping it silently."""
    reasoning = "\n".join(m.strip() for m in _THINK.findall(text)) or None
    if "</think>" in text and "<think>" not in text:  # the template opened <think> in the prompt
        reasoning, text = text.split("</think>", 1)[0].strip() or None, text.split("</think>", 1)[1]
    text = _THINK.sub("", text)
    calls = []
    for block in _TOOL_CALL.findall(text):
        try:
            call = json.loads(block)
            calls.append({"name": str(call["name"]), "arguments": call.get("arguments") or {}})
        except (ValueError, KeyError, TypeError):
            calls.append({"name": "_unparsed", "arguments": {"_unparsed": block[:300]}})
    return ChatResult(_TOOL_CALL.sub("", text).strip(), calls, reasoning)


# the config's decoding rule for this backend (its registry entry's `decoding`; config.backend.decoding_problem)
def local_decoding(section: str, b: BackendConfig) -> str | None:
    """hf, vllm: decoding through the model's own chat template and sampler."""
    if b.reasoning_effort in API_EFFORTS:
        return (f"{section}.reasoning_effort: {b.reasoning_effort!r} has no meaning for backend {b.backend}: "
                "Qwen3-style thinking is on or off through the chat template (enable_thinking); use on or none")
    if b.temperature == 0 and (b.top_p is not None or b.top_k is not None):
        return (f"{section}.top_p / top_k: temperature 0 is greedy decoding on backend {b.backend}, which "
                "ignores them; unset them or set a temperature above 0")
    return None
