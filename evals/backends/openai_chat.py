"""Any OpenAI-compatible chat-completions endpoint (OpenAI, `vllm serve`, OpenRouter, ...)
through the openai SDK. Retries and backoff are the SDK's; timeouts are per request.

One client per backend, shared by every game in flight (its connection pool keeps connections
alive). Each call goes through the SDK's request path (auth, retries, backoff, timeouts, error
types) but skips its typed layer: profiled at 64 games in flight on 2 cores, the recursive
param transform and the pydantic parse of each reply were a third of the client's CPU per call,
which capped a 100 ms endpoint well below Little's law (tests/benchmarks/bench_runner_concurrency.py).
The reply is read as the JSON the protocol defines; the fields read are the same."""

from __future__ import annotations

import json

from skillos.evals.backends.chat import BackendError, ChatResult, api_key


class OpenAIChat:
    def __init__(self, config):
        import httpx
        import openai

        self._openai, self._httpx = openai, httpx
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
        extra = kwargs.pop("extra_body", {})
        try:
            response = self.client.post("/chat/completions", body={**kwargs, **extra}, cast_to=self._httpx.Response)
            payload = response.json()
        except self._openai.OpenAIError as exc:
            raise BackendError(f"{type(exc).__name__}: {exc}"[:300]) from exc
        except ValueError as exc:  # a 200 with HTML or an empty body
            raise BackendError(f"the endpoint's reply is not JSON: {exc}"[:300]) from exc
        try:
            return _result(payload)
        except BackendError:
            raise
        except Exception as exc:  # noqa: BLE001 - JSON of the wrong shape: a failed call, not a crash
            raise BackendError(f"malformed reply ({type(exc).__name__}: {exc})"[:300]) from exc


def _result(payload) -> ChatResult:
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not choices or not isinstance(choices, list):
        raise BackendError("the endpoint returned no choices (not a chat completion)")
    message = choices[0].get("message") or {}
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except (TypeError, ValueError):
            arguments = {"_unparsed": function.get("arguments")}
        calls.append({"name": function.get("name"), "arguments": arguments})
    usage = payload.get("usage") or {}
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    return ChatResult(message.get("content") or "", calls, reasoning,
                      usage.get("prompt_tokens"), usage.get("completion_tokens"))


def _wire(message: dict) -> dict:
    """The canonical message (tool-call arguments as a dict) in the API's form (a JSON string)."""
    if not message.get("tool_calls"):
        return message
    calls = [{**c, "function": {**c["function"], "arguments": json.dumps(c["function"]["arguments"])}}
             for c in message["tool_calls"]]
    return {**message, "tool_calls": calls}
