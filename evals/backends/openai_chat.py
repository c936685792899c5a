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

from skillos.evals.backends.chat import SAMPLING_SEED, BackendError, ChatResult, api_key


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
        body = request_body(self.config, messages, tools)
        try:
            response = self.client.post("/chat/completions", body=body, cast_to=self._httpx.Response)
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


def request_body(config, messages: list[dict], tools: list[dict] | None = None) -> dict:
    """The JSON body of one chat-completions request: what the endpoint receives (`chat` posts
    exactly this; `skillos gate check --trace` reads it). Decoding settings that are set go in
    the API's own fields; `top_k` is not an OpenAI parameter, so it goes in the body only for a
    `base_url` server that reads it (vLLM, OpenRouter): the config refuses it for the OpenAI API."""
    c = config
    body = {"model": c.model, "messages": [_wire(m) for m in messages]}
    for key in ("temperature", "top_p", "max_tokens", "reasoning_effort", "top_k"):
        if getattr(c, key) is not None:
            body[key] = getattr(c, key)
    if c.reasoning_effort == "on":  # Qwen3-style thinking on a `vllm serve` base_url: its chat template's switch
        del body["reasoning_effort"]
        body["chat_template_kwargs"] = {"enable_thinking": True}
    if SAMPLING_SEED.get() is not None and c.temperature != 0:  # a trial's own draws (eval.trials)
        body["seed"] = SAMPLING_SEED.get().next()
    if tools:  # the API takes name, description and parameters only
        body["tools"] = [{"type": "function", "function": {k: v for k, v in t["function"].items()
                                                           if k != "return"}} for t in tools]
    return body


def sent(config) -> dict:
    """Decoding key -> (where it arrives, the value that arrives), for one probe request."""
    body = request_body(config, [{"role": "user", "content": "probe"}])
    out = {key: (f"openai POST /chat/completions body.{key}", body.get(key))
           for key in ("model", "temperature", "top_p", "top_k", "max_tokens", "reasoning_effort")}
    if "chat_template_kwargs" in body:
        out["reasoning_effort"] = (f"openai POST /chat/completions body.chat_template_kwargs="
                                   f"{body['chat_template_kwargs']}", "on")
    return out


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
