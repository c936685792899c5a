"""Any OpenAI-compatible chat-completions endpoint (OpenAI, `vllm serve`, OpenRouter, ...)
through the openai SDK. Retries and backoff are the SDK's; timeouts are per request.

One client per backend, shared by every game in flight (its connection pool keeps connections
alive). Each call goes through the SDK's request path (auth, retries, backoff, timeouts, error
types) but skips its typed layer: profiled at 64 games in flight on 2 cores, the recursive
param transform and the pydantic parse of each reply were a third of the client's CPU per call,
which capped a 100 ms endpoint well below Little's law (tests/benchmarks/bench_runner_concurrency.py).
The reply is read as the JSON the protocol defines; the fields read are the same.

Admissible decoding (`executor.decoding: admissible`) scores each candidate through the legacy
completions endpoint of a server that echoes prompt log-probabilities (`vllm serve`; the OpenAI
API does not, and the config refuses it there): see `OpenAIChat.score`."""

from __future__ import annotations

import json

from skillos.config.backend import API_EFFORTS, BackendConfig, decoding_of
from skillos.errors import SkillosError
from skillos.evals.backends.chat import SAMPLING_SEED, BackendError, ChatResult, api_key, scored_sent
from skillos.evals.backends.hf_chat import Scored, normalised, scoring_tokens
from skillos.evals.backends.tiny_model import resolve


class OpenAIChat:
    def __init__(self, config):
        import httpx
        import openai

        self._openai, self._httpx = openai, httpx
        self.model = config.model
        self.config = config
        self.client = openai.OpenAI(api_key=api_key(config), base_url=config.base_url,
                                    timeout=config.timeout_s, max_retries=config.max_retries)
        # scoring renders the prompt here, with the served model's own chat template
        self.tokenizer = scoring_tokenizer(config.model) if decoding_of(config) == "admissible" else None

    def chat(self, messages: list[dict], tools: list[dict] | None = None) -> ChatResult:
        return self._post("/chat/completions", request_body(self.config, messages, tools), _result)

    def score(self, messages: list[dict], continuations: list[str], likelihood: str, prefix: str = "") -> Scored:
        """Each continuation's log-likelihood after the prompt and `prefix`, as HFChat.score
        computes it (the same tokens: `scoring_tokens`), from the server: one legacy completions
        request whose prompts are the token ids of the prompt followed by each candidate, echoed
        with their log-probabilities (`echo`, `logprobs`; the one token generated is dropped).
        The candidates' tokens are read at their own positions, by count; an echo of another length
        than the tokens sent (a server that adds a BOS, or leaves out the generated token's place) or
        whose first token is scored (an echo shifted by one) is refused, as is any reply that does
        not echo every token with a log-probability: a BackendError (the game unmeasured), never a
        guessed score."""
        context, conts = scoring_tokens(self.tokenizer, messages, continuations, prefix)
        prompts = [context + c for c in conts]
        body = {"model": self.model, "prompt": prompts, "max_tokens": 1, "temperature": 0, "echo": True, "logprobs": 1}

        def read(payload) -> Scored:
            totals = echoed_totals(payload, len(context), conts)
            usage = payload.get("usage") or {}
            taken, made = usage.get("prompt_tokens"), usage.get("completion_tokens")
            if isinstance(taken, int) and taken != sum(map(len, prompts)):
                raise BackendError(f"the endpoint read {taken} prompt tokens of the {sum(map(len, prompts))} sent: "
                                   "it tokenized them its own way, so the candidates' positions are not known: "
                                   "not scored")
            return Scored(normalised(totals, conts, likelihood), taken if isinstance(taken, int) else None,
                          made if isinstance(made, int) else None)

        return self._post("/completions", body, read)

    def _post(self, path: str, body: dict, read):
        """POST `body` to `path` and `read` the JSON reply; a failed request, a reply that is not
        JSON or JSON of the wrong shape is a BackendError (a failed call, not a crash)."""
        try:
            response = self.client.post(path, body=body, cast_to=self._httpx.Response)
            payload = response.json()
        except self._openai.OpenAIError as exc:
            raise BackendError(f"{type(exc).__name__}: {exc}"[:300]) from exc
        except ValueError as exc:  # a 200 with HTML or an empty body
            raise BackendError(f"the endpoint's reply is not JSON: {exc}"[:300]) from exc
        try:
            return read(payload)
        except BackendError:
            raise
        except Exception as exc:  # noqa: BLE001 - JSON of the wrong shape: a failed call, not a crash
            raise BackendError(f"malformed reply ({type(exc).__name__}: {exc})"[:300]) from exc


def scoring_tokenizer(model: str):
    """The served model's tokenizer, for its chat template and token ids: a fetched model's name,
    a weights folder or a name in the local hub cache (as the hf backend resolves it). A server's
    model this machine has no tokenizer of is refused in one line before any game."""
    try:
        from transformers import AutoTokenizer  # heavy and optional: only admissible decoding needs it
    except ImportError as exc:
        raise SkillosError("executor.decoding admissible over a server renders its prompt here with the model's "
                           "chat template: pip install 'skillos[hf]'") from exc
    needs = "executor.decoding admissible over a server needs the served model's tokenizer here " \
            "(its chat template and token ids)"
    try:
        path = resolve(model)
    except SkillosError as exc:
        raise SkillosError(f"{needs}: {exc}") from exc
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError, KeyError) as exc:  # weights without tokenizer files, a damaged folder
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise SkillosError(f"{needs}: model {model!r} at {path} has none that loads ({reason})") from exc
    if len(tokenizer) < 2:  # transformers builds an empty one from a config alone
        raise SkillosError(f"{needs}: model {model!r} at {path} has none that loads (no tokenizer files)")
    if tokenizer.chat_template is None:
        raise SkillosError(f"model {model!r}: its tokenizer has no chat template")
    return tokenizer


def echoed_totals(payload, context_len: int, conts: list[list[int]]) -> list[float]:
    """Each candidate's summed log-probability from a legacy completions reply that echoed its
    prompts: choice i (by its `index`, 0..n-1) scores prompt i; its token_logprobs hold one entry
    per token sent, the first unscored (None: nothing comes before it), then at most the one token
    generated; the candidate's are those after `context_len` prompt tokens. Anything else (a
    choice missing, an index repeated, an echo longer or shorter than what was sent, a first token
    scored, a position unscored) is a BackendError."""
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not isinstance(choices, list) or len(choices) != len(conts):
        raise BackendError(f"the endpoint returned {len(choices) if isinstance(choices, list) else 'no'} choices for "
                           f"{len(conts)} scored prompts (not a legacy completions reply)")
    indices = [c.get("index") if isinstance(c, dict) else None for c in choices]
    if sorted(i for i in indices if isinstance(i, int)) != list(range(len(conts))):
        raise BackendError(f"the endpoint's choices are indexed {indices[:8]}, not 0..{len(conts) - 1}: which "
                           "candidate each scores is not known")
    totals = []
    for i, cont in enumerate(conts):
        choice = choices[indices.index(i)]
        logprobs = (choice.get("logprobs") or {}).get("token_logprobs")
        if not isinstance(logprobs, list):
            raise BackendError("the endpoint echoed no prompt log-probabilities (it needs echo and logprobs on "
                               "/completions: vllm serve gives them; the OpenAI API and llama-cpp-python's server "
                               "do not)")
        sent = context_len + len(cont)
        if len(logprobs) - sent not in (0, 1) or (logprobs and logprobs[0] is not None):
            raise BackendError(f"the endpoint echoed {len(logprobs)} log-probabilities for prompt {i}'s {sent} tokens"
                               f"{'' if not logprobs or logprobs[0] is None else ', its first token scored'}: "
                               "shifted or padded, not scored")
        span = logprobs[context_len:sent]
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in span):
            raise BackendError(f"the endpoint left a token of prompt {i}'s candidate unscored: not scored")
        totals.append(float(sum(span)))
    return totals


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
    if decoding_of(config) == "admissible":
        return scored_sent(out, config, "OpenAIChat.score(): POST /completions with echo and logprobs, every "
                           "admissible action scored after the prompt, the most likely taken",
                           "the action's echoed log-probabilities")
    elif hasattr(config, "decoding"):
        out["decoding"] = ("openai POST /chat/completions: the model writes its action", "generate")
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


# the config's decoding rule for this backend (its registry entry's `decoding`; config.backend.decoding_problem)
def openai_decoding(section: str, b: BackendConfig) -> str | None:
    """openai: the OpenAI API's fields, or a `vllm serve` / OpenRouter base_url's."""
    if b.reasoning_effort == "on" and not b.base_url:
        return (f"{section}.reasoning_effort: 'on' is the chat-template switch of hf, vllm and a `vllm serve` "
                f"base_url; backend {b.backend} takes {', '.join(API_EFFORTS)} or none")
    if b.top_k is not None and not b.base_url:
        return (f"{section}.top_k: the OpenAI API has no top_k and rejects the request; unset it, or set "
                f"{section}.base_url to a server that reads it (vllm serve, OpenRouter)")
    if decoding_of(b) == "admissible" and not b.base_url:
        return (f"{section}.decoding: admissible scores each action from the prompt's echoed log-probabilities, "
                f"which the OpenAI API does not return; set {section}.base_url to a server that does (vllm serve) or "
                f"{section}.decoding generate")
    return None
