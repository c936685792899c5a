"""Any OpenAI-compatible chat-completions endpoint (OpenAI, `vllm serve`, OpenRouter, ...)
through the openai SDK. Retries and backoff are the SDK's; timeouts are per request."""

from __future__ import annotations

import json

from skillos.evals.backends.chat import BackendError, ChatResult, api_key


class OpenAIChat:
    def __init__(self, config):
        import openai

        self._openai = openai
        self.model = config.model
        self.config = config
        self.client = openai.OpenAI(api_key=api_key(config), base_url=config.base_url,
                                    timeout=config.timeout_s, max_retries=config.max_retries)

    def chat(self, messages: list[dict], tools: list[dict] | None = None) -> ChatResult:
        c = self.config
        kwargs = {"model": self.model, "messages": [_wire(m) for m in messages]}
        for key, value in (("temperature", c.temperature), ("top_p", c.top_p),
                           ("max_tokens", c.max_tokens), ("reasoning_effort", c.reasoning_effort)):
            if value is not None:
                kwargs[key] = value
        if c.top_k is not None:  # not an OpenAI parameter; vLLM and others read it from the body
            kwargs["extra_body"] = {"top_k": c.top_k}
        if tools:  # the API takes name, description and parameters only
            kwargs["tools"] = [{"type": "function", "function": {k: v for k, v in t["function"].items()
                                                                  if k != "return"}} for t in tools]
        try:
            response = self.client.chat.completions.create(**kwargs)
        except (self._openai.OpenAIError, ValueError, TypeError, AttributeError, KeyError) as exc:
            raise BackendError(f"{type(exc).__name__}: {exc}"[:300]) from exc  # a body it cannot parse too
        try:
            return _result(response)
        except BackendError:
            raise
        except Exception as exc:  # noqa: BLE001 - a 200 with HTML, an empty body, a wrong shape
            raise BackendError(f"malformed reply ({type(exc).__name__}: {exc})"[:300]) from exc


def _result(response) -> ChatResult:
    if isinstance(response, (str, bytes)) or not getattr(response, "choices", None):
        raise BackendError("the endpoint returned no choices (not a chat completion)")
    message = response.choices[0].message
    calls = []
    for call in message.tool_calls or []:
        try:
            arguments = json.loads(call.function.arguments or "{}")
        except ValueError:
            arguments = {"_unparsed": call.function.arguments}
        calls.append({"name": call.function.name, "arguments": arguments})
    usage = response.usage
    reasoning = getattr(message, "reasoning_content", None) or getattr(message, "reasoning", None)
    return ChatResult(message.content or "", calls, reasoning,
                      usage.prompt_tokens if usage else None,
                      usage.completion_tokens if usage else None)


def _wire(message: dict) -> dict:
    """The canonical message (tool-call arguments as a dict) in the API's form (a JSON string)."""
    if not message.get("tool_calls"):
        return message
    calls = [{**c, "function": {**c["function"], "arguments": json.dumps(c["function"]["arguments"])}}
             for c in message["tool_calls"]]
    return {**message, "tool_calls": calls}
