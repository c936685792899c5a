"""A local model through transformers: `model:` is a weights folder (full model or a LoRA
adapter that skillos train wrote), a name already in the local Hugging Face cache, or
`tiny-qwen2` (built here, no download). Runs on CPU for small models, on a GPU when one is
visible. The prompt is the model's own chat template with the tools (or, for a template that
renders no tools, skillos's tool format: tool_format.py); tool calls and reasoning are parsed
from the generated text (`chat.parse_generated`).

One model serves every thread: calls are serialised by a lock (generate is not thread-safe),
so concurrency buys nothing here; for throughput on a GPU use `vllm serve` and the openai backend.
A generation that runs past `timeout_s` raises BackendError, so the game is unmeasured.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from skillos.config.backend import decoding_of
from skillos.errors import SkillosError
from skillos.evals.backends.chat import SAMPLING_SEED, BackendError, ChatResult, parse_generated, scored_sent
from skillos.evals.backends.tool_format import renders_tools, with_tools
from skillos.evals.backends.tiny_model import resolve
from skillos.evals.backends import windowed_attention

DEFAULT_MAX_TOKENS = 512
LOCAL = {"local_files_only": True}  # weights are never downloaded at run time


def load_weights(model: str):
    """(model, tokenizer, path) for a config's model; a LoRA adapter is loaded onto its base."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve(model)
    try:
        base = adapter_base(path)
        if base:
            from peft import PeftModel

            loaded = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base, **LOCAL, **windowed_attention.load_kwargs(base)),
                                               path, **LOCAL)
        else:
            loaded = AutoModelForCausalLM.from_pretrained(path, **LOCAL, **windowed_attention.load_kwargs(path))
        tokenizer = AutoTokenizer.from_pretrained(path, **LOCAL)
    except (OSError, ValueError, KeyError) as exc:
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise SkillosError(f"model {model!r}: cannot load weights from {path}: {reason}") from exc
    if tokenizer.chat_template is None:
        raise SkillosError(f"model {model!r}: its tokenizer has no chat template")
    return loaded.eval(), tokenizer, path


class HFChat:
    def __init__(self, config):
        import torch

        self._torch = torch
        self.config = config
        self.model = config.model
        self.net, self.tokenizer, self.path = load_weights(config.model)
        check_thinking_switch(self.tokenizer.chat_template, config)
        # a template that shows the model no tools gets them from skillos's own format (tool_format)
        self.renders_tools = renders_tools(self.tokenizer)
        if torch.cuda.is_available():
            self.net.to("cuda")
        self._lock = threading.Lock()
        self._cache_arg = cache_arg()

    def chat(self, messages: list[dict], tools: list[dict] | None = None) -> ChatResult:
        c = self.config
        if tools and not self.renders_tools:
            messages, tools = with_tools(messages, tools), None
        prompt = self.tokenizer.apply_chat_template(messages, tools=tools or None, add_generation_prompt=True,
                                                    tokenize=False, **template_kwargs(c))
        inputs = self.tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(self.net.device)
        self._fits(int(inputs["input_ids"].shape[1]))
        kwargs = generation_kwargs(c, self.tokenizer.pad_token_id)
        start = time.monotonic()
        with self._lock, self._torch.no_grad():
            if kwargs["do_sample"] and SAMPLING_SEED.get() is not None:  # a trial's own draws (eval.trials)
                self._torch.manual_seed(SAMPLING_SEED.get().next())
            try:
                out = self.net.generate(**inputs, **kwargs)
            except (RuntimeError, ValueError) as exc:  # out of memory, context overflow, bad sampling values
                raise BackendError(f"{type(exc).__name__}: {exc}"[:300]) from exc
        new = out[0, inputs["input_ids"].shape[1]:]
        finished = len(new) > 0 and int(new[-1]) == self.tokenizer.eos_token_id
        if not finished and time.monotonic() - start >= c.timeout_s:
            raise BackendError(f"timeout: generation ran past {c.timeout_s:g} s")
        result = parse_generated(self.tokenizer.decode(new, skip_special_tokens=True))
        result.prompt_tokens, result.completion_tokens = int(inputs["input_ids"].shape[1]), len(new)
        return result

    def score(self, messages: list[dict], continuations: list[str], likelihood: str, prefix: str = "") -> Scored:
        """Each continuation's log-likelihood after the prompt the messages make and `prefix` (the
        reply's fixed opening, part of the context so it weighs on no candidate), `likelihood`
        mean (per token) or sum. A template with Qwen3's thinking switch gets it off: the action
        is scored where the reply starts, with no reasoning before it. The prompt is encoded once; then every
        candidate's tokens go through one more forward pass together, each attending to the
        prompt's KV cache and to its own earlier tokens only (a block mask, positions restarting
        after the prompt), so a step costs about one prompt pass plus the candidates' tokens.
        A continuation is tokenized on its own (its first token scored from the prompt's last
        logits), as lm-eval-harness scores choices."""
        torch = self._torch
        context, conts = scoring_tokens(self.tokenizer, messages, continuations, prefix)
        self._fits(len(context) + max(map(len, conts), default=0))
        ids = torch.tensor([context], device=self.net.device)
        start = time.monotonic()
        totals: list[float] = []
        with self._lock, torch.no_grad():
            try:
                out = self.net(input_ids=ids, use_cache=True)
                first = out.logits[0, -1].float().log_softmax(-1)
                cache = getattr(out, self._cache_arg)
                for batch in _batches(conts, SCORE_TOKENS):
                    totals += self._score_batch(ids.shape[1], cache, first, batch)
                    cache.crop(-sum(map(len, batch)))  # the pass appended the candidates: back to the prompt alone
            except (RuntimeError, ValueError, TypeError, AttributeError) as exc:  # out of memory, context
                # overflow, a model or cache type this scoring cannot drive: the game is unmeasured
                raise BackendError(f"{type(exc).__name__}: {exc}"[:300]) from exc
        if time.monotonic() - start >= self.config.timeout_s:
            raise BackendError(f"timeout: scoring ran past {self.config.timeout_s:g} s")
        return Scored(normalised(totals, conts, likelihood), int(ids.shape[1]) + sum(map(len, conts)))

    def _fits(self, tokens: int) -> None:
        """A prompt longer than the model's context is a BackendError at once (the game unmeasured,
        with the numbers), not a generation that runs to its timeout. Only the prompt is checked (a
        reply may still run out of positions), and only where the config's length is the model's
        own: a rope-scaled model (yarn, dynamic, linear) reads past max_position_embeddings."""
        config = getattr(self.net, "config", None)
        context = getattr(config, "max_position_embeddings", None)
        scaling = getattr(config, "rope_scaling", None) or getattr(config, "rope_parameters", None) or {}
        scaled = isinstance(scaling, dict) and scaling.get("rope_type", scaling.get("type", "default")) != "default"
        if isinstance(context, int) and not scaled and tokens > context:
            raise BackendError(f"the prompt is {tokens} tokens, over the model's context of {context}: "
                               "fewer or shorter skills, or a model with a longer context")

    def _score_batch(self, prompt_len: int, cache, first, batch: list[list[int]]) -> list[float]:
        torch, device = self._torch, self.net.device
        flat = [t for c in batch for t in c]
        owner = torch.tensor([i for i, c in enumerate(batch) for _ in c], device=device)
        positions = torch.tensor([[prompt_len + j for c in batch for j in range(len(c))]], device=device)
        n = len(flat)
        own = (owner[:, None] == owner[None, :]) & torch.ones(n, n, dtype=torch.bool, device=device).tril()
        allowed = torch.cat([torch.ones(n, prompt_len, dtype=torch.bool, device=device), own], dim=1)
        dtype = self.net.dtype if self.net.dtype.is_floating_point else torch.float32
        mask = torch.zeros(allowed.shape, dtype=dtype, device=device).masked_fill(~allowed, torch.finfo(dtype).min)
        logp = self.net(input_ids=torch.tensor([flat], device=device), position_ids=positions,
                        attention_mask=mask[None, None], **{self._cache_arg: cache}).logits[0].float().log_softmax(-1)
        out, at = [], 0
        for c in batch:
            out.append(float(first[c[0]]) + sum(float(logp[at + j - 1, c[j]]) for j in range(1, len(c))))
            at += len(c)
        return out


def scoring_tokens(tokenizer, messages: list[dict], continuations: list[str], prefix: str = "") -> tuple[list, list]:
    """(the prompt's tokens, each continuation's tokens) of a scoring call, whoever computes the
    log-probabilities: the chat template with its generation prompt (Qwen3's thinking switched off
    where the template has it: the action is scored where the reply starts), then `prefix`; each
    continuation tokenized on its own (an empty one as the end-of-text token), as
    lm-eval-harness scores choices."""
    switch = {"enable_thinking": False} if "enable_thinking" in str(tokenizer.chat_template) else {}
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False, **switch)
    context = tokenizer(prompt + prefix, add_special_tokens=False)["input_ids"]
    return context, [tokenizer(c, add_special_tokens=False)["input_ids"] or [tokenizer.eos_token_id]
                     for c in continuations]


def normalised(totals: list[float], conts: list[list], likelihood: str) -> list[float]:
    """Each continuation's summed log-probability as `likelihood` asks: mean (per token) or sum."""
    return [total / len(c) if likelihood == "mean" else total for total, c in zip(totals, conts)]


@dataclass
class Scored:
    """What `score` returns: a score per continuation, and the tokens the model read for them
    (in process: the prompt once and every candidate's own; a server: what it reported, None
    where it reported nothing)."""

    values: list
    tokens_read: int | None
    tokens_generated: int | None = 0  # a server generates one token per scored prompt (and may not say)


# candidate tokens scored in one forward pass (bounds the logits held: tokens x vocabulary floats)
SCORE_TOKENS = 1024


def _batches(conts: list[list[int]], budget: int):
    """Consecutive runs of candidates of at most `budget` tokens (a longer one alone)."""
    batch, size = [], 0
    for c in conts:
        if batch and size + len(c) > budget:
            yield batch
            batch, size = [], 0
        batch.append(c)
        size += len(c)
    if batch:
        yield batch


def cache_arg() -> str:
    """The name of a KV cache in a forward call and its output: transformers 5.2x renamed
    past_key_values to cache (the GPU machine's transformers may be older)."""
    from transformers.modeling_outputs import CausalLMOutputWithPast

    return "cache" if "cache" in CausalLMOutputWithPast.__dataclass_fields__ else "past_key_values"


def template_kwargs(config) -> dict:
    """What the chat template receives besides the messages: Qwen3-style `enable_thinking`
    from reasoning_effort (on -> True, none -> False; unset: the template's own default)."""
    effort = config.reasoning_effort
    return {} if effort is None else {"enable_thinking": effort != "none"}


def check_thinking_switch(chat_template, config) -> None:
    """A reasoning_effort the model's chat template cannot honour is refused in one line, never
    passed to a template that ignores it."""
    if template_kwargs(config) and "enable_thinking" not in str(chat_template or ""):
        raise SkillosError(f"model {config.model!r}: reasoning_effort {config.reasoning_effort} needs a chat template "
                           "with Qwen3's enable_thinking switch, and this model's has none; unset reasoning_effort")


def generation_kwargs(config, pad_token_id=None) -> dict:
    """The `generate` arguments of one reply (what the sampler receives): max_tokens as
    max_new_tokens; temperature, top_p and top_k when sampling (temperature 0 is greedy)."""
    c = config
    sample = (c.temperature if c.temperature is not None else 1.0) > 0
    kwargs = dict(max_new_tokens=c.max_tokens or DEFAULT_MAX_TOKENS, do_sample=sample,
                  max_time=c.timeout_s, pad_token_id=pad_token_id)
    if sample:
        kwargs.update({k: v for k, v in (("temperature", c.temperature), ("top_p", c.top_p),
                                         ("top_k", c.top_k)) if v is not None})
    return kwargs


def sent(config) -> dict:
    """Decoding key -> (where it arrives, the value that arrives, in the config's terms)."""
    gen, template = generation_kwargs(config), template_kwargs(config)
    thinking = template.get("enable_thinking")
    out = {"model": ("transformers from_pretrained(model)", config.model),
           "max_tokens": ("transformers generate(max_new_tokens=)", gen["max_new_tokens"]),
           "reasoning_effort": (f"chat template apply_chat_template(enable_thinking={thinking})",
                                None if thinking is None else "on" if thinking else "none")}
    for key in ("temperature", "top_p", "top_k"):
        out[key] = (f"transformers generate({key}=)" if gen["do_sample"] else
                    "transformers generate(do_sample=False): greedy", gen.get(key) if gen["do_sample"] else
                    (0.0 if key == "temperature" else None))
    if decoding_of(config) == "admissible":
        return scored_sent(out, config, "HFChat.score(): every admissible action scored after one prompt pass, "
                           "the most likely taken", "the action's log-probabilities")
    elif hasattr(config, "decoding"):
        out["decoding"] = ("transformers generate(): the model writes its action", "generate")
    return out


def adapter_base(path: str) -> str | None:
    """The base model of a LoRA adapter folder (None for a full model)."""
    config = Path(path) / "adapter_config.json"
    if not config.is_file():
        return None
    try:
        return json.loads(config.read_text())["base_model_name_or_path"]
    except (ValueError, KeyError) as exc:
        raise SkillosError(f"{config}: unreadable adapter config ({exc})") from exc
