"""Anthropic's messages API through the anthropic SDK, behind the same chat interface.

System messages become the `system` parameter; OpenAI-style tool specs become Anthropic tools;
reasoning_effort turns extended thinking on with a budget inside max_tokens."""

from __future__ import annotations

from skillos.evals.backends.chat import BackendError, ChatResult, api_key

THINKING_BUDGET = {"low": 1024, "medium": 4096, "high": 16384}
DEFAULT_MAX_TOKENS = 4096


class AnthropicChat:
    def __init__(self, config):
        import anthropic

        self._anthropic = anthropic
        self.model = config.model
        self.config = config
        self.client = anthropic.Anthropic(api_key=api_key(config), base_url=config.base_url,
                                          timeout=config.timeout_s, max_retries=config.max_retries)

    def chat(self, messages: list[dict], tools: list[dict] | None = None) -> ChatResult:
        c = self.config
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        turns = _turns([m for m in messages if m["role"] != "system"])
        kwargs = {"model": self.model, "messages": turns,
                  "max_tokens": c.max_tokens or DEFAULT_MAX_TOKENS}
        if system:
            kwargs["system"] = system
        # this SDK version takes sampling settings only in the request body
        sampling = {k: v for k, v in (("temperature", c.temperature), ("top_p", c.top_p),
                                      ("top_k", c.top_k)) if v is not None}
        if sampling:
            kwargs["extra_body"] = sampling
        budget = THINKING_BUDGET.get(c.reasoning_effort or "none")
        if budget:
            kwargs["thinking"] = {"type": "enabled",
                                  "budget_tokens": min(budget, kwargs["max_tokens"] - 1)}
        if tools:
            kwargs["tools"] = [{"name": t["function"]["name"],
                                "description": t["function"].get("description", ""),
                                "input_schema": t["function"]["parameters"]} for t in tools]
        try:
            response = self.client.messages.create(**kwargs)
        except (self._anthropic.AnthropicError, ValueError, TypeError, AttributeError, KeyError) as exc:
            raise BackendError(f"{type(exc).__name__}: {exc}"[:300]) from exc  # a body it cannot parse too
        try:
            return _result(response)
        except Exception as exc:  # noqa: BLE001 - a 200 with HTML, an empty body, a wrong shape
            raise BackendError(f"malformed reply ({type(exc).__name__}: {exc})"[:300]) from exc


def _result(response) -> ChatResult:
    text, thinking, calls = [], [], []
    for block in response.content:
        if block.type == "text":
            text.append(block.text)
        elif block.type == "thinking":
            thinking.append(block.thinking)
        elif block.type == "tool_use":
            calls.append({"name": block.name, "arguments": dict(block.input) if isinstance(block.input, dict) else block.input})
    usage = response.usage
    return ChatResult("".join(text), calls, "".join(thinking) or None,
                      usage.input_tokens if usage else None,
                      usage.output_tokens if usage else None)


def _turns(messages: list[dict]) -> list[dict]:
    """Canonical messages -> Anthropic turns: tool calls become tool_use blocks, tool responses
    tool_result blocks in a user turn (consecutive ones merged, as the API requires)."""
    turns = []
    for m in messages:
        if m["role"] == "assistant" and m.get("tool_calls"):
            blocks = [{"type": "text", "text": m["content"]}] if m.get("content") else []
            blocks += [{"type": "tool_use", "id": c["id"], "name": c["function"]["name"],
                        "input": c["function"]["arguments"]} for c in m["tool_calls"]]
            turns.append({"role": "assistant", "content": blocks})
        elif m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
            if turns and turns[-1]["role"] == "user" and isinstance(turns[-1]["content"], list):
                turns[-1]["content"].append(block)
            else:
                turns.append({"role": "user", "content": [block]})
        else:
            turns.append({"role": m["role"], "content": m["content"]})
    return turns
