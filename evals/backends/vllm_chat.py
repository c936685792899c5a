"""The vLLM engine in-process (GPU only; vllm is imported here and nowhere else, so the CPU
install never needs it). `model:` is resolved as for the hf backend; a LoRA adapter that
skillos train wrote is served on its base with a LoRARequest. Tool calls and reasoning are
parsed from the generated text the same way as hf (`chat.parse_generated`). Decoding: every
reply's `SamplingParams` come from `sampling_kwargs` and Qwen3-style thinking from
reasoning_effort through the chat template (`chat_template_kwargs={"enable_thinking": ...}`).

The engine is not thread-safe, so calls are serialised; for many games in flight, start
`vllm serve` and use the openai backend with `base_url`, which batches across requests.
"""

from __future__ import annotations

import threading

from skillos.errors import SkillosError
from skillos.evals.backends.chat import BackendError, ChatResult, parse_generated
from skillos.evals.backends.hf_chat import DEFAULT_MAX_TOKENS, adapter_base, check_thinking_switch, template_kwargs
from skillos.evals.backends.tiny_model import resolve


class VLLMChat:
    def __init__(self, config):
        try:
            import vllm
        except ImportError as exc:
            raise SkillosError("backend vllm runs the vLLM engine in-process and needs a GPU machine "
                               "with vllm installed (pip install vllm); on CPU use backend hf") from exc

        self._vllm = vllm
        self.config = config
        self.model = config.model
        path = resolve(config.model)
        base = adapter_base(path)
        if base:
            from vllm.lora.request import LoRARequest

            self._lora = LoRARequest("curator", 1, path)
        else:
            self._lora = None
        try:
            self.engine = vllm.LLM(model=base or path, enable_lora=bool(base), seed=0)
        except Exception as exc:  # vllm raises many types at start-up (no GPU, no memory, bad weights)
            raise SkillosError(f"vllm could not start {config.model!r}: {str(exc).splitlines()[0][:200]}") from exc
        check_thinking_switch(self.engine.get_tokenizer().chat_template, config)
        self._lock = threading.Lock()

    def chat(self, messages: list[dict], tools: list[dict] | None = None) -> ChatResult:
        params = self._vllm.SamplingParams(**sampling_kwargs(self.config))
        with self._lock:
            try:
                out = self.engine.chat(messages, params, tools=tools or None, use_tqdm=False,
                                       lora_request=self._lora, **chat_kwargs(self.config))
            except (RuntimeError, ValueError) as exc:
                raise BackendError(f"{type(exc).__name__}: {exc}"[:300]) from exc
        if not out or not out[0].outputs:
            raise BackendError("vllm returned no output")
        generated = out[0].outputs[0]
        result = parse_generated(generated.text)
        result.prompt_tokens = len(out[0].prompt_token_ids or [])
        result.completion_tokens = len(generated.token_ids)
        return result


def sampling_kwargs(config) -> dict:
    """The `SamplingParams` of every reply (what vLLM's sampler receives): max_tokens, and
    temperature, top_p and top_k when set (unset: vLLM's defaults, T 1.0, top_p 1, no top_k)."""
    c = config
    return {"max_tokens": c.max_tokens or DEFAULT_MAX_TOKENS,
            **{k: v for k, v in (("temperature", c.temperature), ("top_p", c.top_p), ("top_k", c.top_k))
               if v is not None}}


def chat_kwargs(config) -> dict:
    """`LLM.chat` arguments besides messages and sampling: the chat template's enable_thinking."""
    template = template_kwargs(config)
    return {"chat_template_kwargs": template} if template else {}


def sent(config) -> dict:
    """Decoding key -> (where it arrives, the value that arrives, in the config's terms)."""
    params, chat = sampling_kwargs(config), chat_kwargs(config)
    thinking = chat.get("chat_template_kwargs", {}).get("enable_thinking")
    out = {"model": ("vllm LLM(model=)", config.model),
           "reasoning_effort": (f"vllm LLM.chat(chat_template_kwargs={chat.get('chat_template_kwargs')})",
                                None if thinking is None else "on" if thinking else "none")}
    for key in ("temperature", "top_p", "top_k", "max_tokens"):
        out[key] = (f"vllm SamplingParams({key}=)", params.get(key))
    return out
