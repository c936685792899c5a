"""One small interface for every model backend: `chat(messages, tools)` -> `ChatResult`.

Messages are OpenAI-style dicts ({"role": "system" | "user" | "assistant", "content": str}).
A backend retries 429 / 5xx / timeouts with the SDK's own backoff (`max_retries`), then raises
`BackendError`: the caller records the game as unmeasured, never as a failure. API keys come
only from the environment variable the config names.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Protocol

from skillos.errors import SkillosError

DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


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
    model: str

    def chat(self, messages: list[dict], tools: list[dict] | None = None) -> ChatResult: ...


def api_key(config) -> str:
    name = config.api_key_env or DEFAULT_KEY_ENV.get(config.backend, "")
    key = os.environ.get(name, "") if name else ""
    if not key:
        raise SkillosError(f"{config.backend} backend needs an API key in ${name} "
                           "(keys are read from the environment only)")
    return key


def make_chat(config) -> ChatBackend:
    """A chat backend from an executor / curator / judge config section."""
    if not config.model:
        raise SkillosError(f"backend {config.backend!r} needs a model name (model: ...)")
    if config.backend == "openai":
        from skillos.evals.backends.openai_chat import OpenAIChat

        return OpenAIChat(config)
    if config.backend == "anthropic":
        from skillos.evals.backends.anthropic_chat import AnthropicChat

        return AnthropicChat(config)
    raise SkillosError(f"backend {config.backend!r} is not available in this version; "
                       "use heuristic, openai or anthropic")
