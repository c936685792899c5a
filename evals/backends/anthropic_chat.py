"""Anthropic's messages API through the anthropic SDK, behind the same chat interface.

System messages become the `system` parameter; OpenAI-style tool specs become Anthropic tools;
reasoning_effort (low / medium / high) turns extended thinking on with a budget of 1024 / 4096 /
16384 tokens inside max_tokens; settings the API rejects with thinking on (a temperature other
than 1, top_k, top_p below 0.95, a max_tokens at or below the budget) are refused by the config
(`skillos.config.decoding_problem`), never sent."""

from __future__ import annotations

from skillos.config.backend import ANTHROPIC_THINKING_BUDGET, API_EFFORTS, BackendConfig
from skillos.evals.backends.chat import BackendError, ChatResult, api_key

DEFAULT_MAX_TOKENS = 4096  # a reply's tokens when max_tokens is unset (plus the thinking budget, if on)


class AnthropicChat:
    def __init__(self, config):
        import anthropic

        self._anthropic = anthropic
        self.model = config.model
        self.config = config
        self.client = anthropic.Anthropic(api_key=api_key(config), base_url=config.base_url,
                                          timeout=config.timeout_s, max_retries=config.max_retries)

    def chat(self, messages: list[dict], tools: list[dict] | None = None) -> ChatResult:
        kwargs = request_kwargs(self.config, messages, tools)
        try:
            response = self.client.messages.create(**kwargs)
        except (self._anthropic.AnthropicError, ValueError, TypeError, AttributeError, KeyError) as exc:
            raise BackendError(f"{type(exc).__name__}: {exc}"[:300]) from exc  # a body it cannot parse too
        try:
            return _result(response)
        except Exception as exc:  # noqa: BLE001 - a 200 with HTML, an empty body, a wrong shape
            raise BackendError(f"malformed reply ({type(exc).__name__}: {exc})"[:300]) from exc


def request_kwargs(config, messages: list[dict], tools: list[dict] | None = None) -> dict:
    """The arguments of one `messages.create` call: what the API receives (`chat` sends exactly
    this; `skillos gate check --trace` reads it)."""
    c = config
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    budget = ANTHROPIC_THINKING_BUDGET.get(c.reasoning_effort or "none")
    kwargs = {"model": c.model, "messages": _turns([m for m in messages if m["role"] != "system"]),
              "max_tokens": c.max_tokens or DEFAULT_MAX_TOKENS + (budget or 0)}
    if system:
        kwargs["system"] = system
    # this SDK version takes sampling settings only in the request body
    sampling = {k: v for k, v in (("temperature", c.temperature), ("top_p", c.top_p),
                                  ("top_k", c.top_k)) if v is not None}
    if sampling:
        kwargs["extra_body"] = sampling
    if budget:
        kwargs["thinking"] = {"type": "enabled", "budget_tokens": budget}
    if tools:
        kwargs["tools"] = [{"name": t["function"]["name"],
                            "description": t["function"].get("description", ""),
                            "input_schema": t["function"]["parameters"]} for t in tools]
    return kwargs


def sent(config) -> dict:
    """Decoding key -> (where it arrives, the value that arrives, in the config's terms)."""
    kw = request_kwargs(config, [{"role": "user", "content": "probe"}])
    body = kw.get("extra_body", {})
    budget = (kw.get("thinking") or {}).get("budget_tokens")
    effort = next((e for e, b in ANTHROPIC_THINKING_BUDGET.items() if b == budget), None) if budget else \
        ("none" if config.reasoning_effort == "none" else None)
    out = {"model": ("anthropic messages.create(model=)", kw["model"]),
           "max_tokens": ("anthropic messages.create(max_tokens=)", kw["max_tokens"]),
           "reasoning_effort": (f"anthropic messages.create(thinking={kw.get('thinking')})", effort)}
    for key in ("temperature", "top_p", "top_k"):
        out[key] = (f"anthropic messages.create request body.{key}", body.get(key))
    return out


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


# the config's decoding rule for this backend (its registry entry's `decoding`; config.backend.decoding_problem)
def anthropic_decoding(section: str, b: BackendConfig) -> str | None:
    """anthropic: an effort is an extended-thinking budget, which fixes the sampler."""
    effort = b.reasoning_effort
    if effort == "on":
        return (f"{section}.reasoning_effort: 'on' is the chat-template switch of hf, vllm and a `vllm serve` "
                f"base_url; backend {b.backend} takes {', '.join(API_EFFORTS)} or none")
    if effort in API_EFFORTS:
        budget = ANTHROPIC_THINKING_BUDGET[effort]
        if b.temperature not in (None, 1.0) or b.top_k is not None or (b.top_p is not None and b.top_p < 0.95):
            return (f"{section}: extended thinking (reasoning_effort {effort}) takes no temperature other than 1, "
                    "no top_k and top_p only in [0.95, 1] (the API rejects the request); unset them or set "
                    "reasoning_effort none")
        if b.max_tokens is not None and b.max_tokens <= budget:
            return (f"{section}.max_tokens: {b.max_tokens} leaves no room for reasoning_effort {effort}'s thinking "
                    f"budget of {budget} tokens; raise it above {budget}")
    return None
