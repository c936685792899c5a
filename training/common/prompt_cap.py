"""`training.max_prompt_length`, applied by skillos: TRL 1.16's GRPOConfig has no such field
(earlier TRLs had one and cut each prompt to its last `max_prompt_length` tokens), so a config
that set it was checked by the gates and then dropped. Here it is a field of the arguments the
trainer is built with (`SkillosGRPOConfig`, a GRPOConfig subclass; the selector's config extends
it) and `PromptCap._tokenize_prompts` cuts every tokenized prompt to its last
`max_prompt_length` tokens, as those TRLs did (the end holds the task and the generation
prompt), counting the prompts it cut. The SFT / DPO baselines cut their rendered prompts the
same way (`cap_text`). `skillos gate check --trace` reads the value off the built arguments.
A model whose every layer attends to a window is also given no more of a prompt than it can read
(`PromptCap`, below).

trl is imported only when the config class is first used (PEP 562), like the selector's.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from skillos.evals.backends.windowed_attention import reach
from skillos.training.common import trl_compat


def cap_ids(ids, limit: int | None):
    """`ids` cut to its last `limit` tokens (None: no cap) and whether it was cut."""
    if limit is None or len(ids) <= limit:
        return ids, False
    return ids[len(ids) - limit:], True


def cap_text(tokenizer, text: str, limit: int | None) -> str:
    """A rendered prompt cut to its last `limit` tokens (the SFT / DPO rows' prompts)."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    kept, cut = cap_ids(ids, limit)
    return tokenizer.decode(kept) if cut else text


class PromptCap:
    """Mixin for a GRPOTrainer subclass: prompts longer than `args.max_prompt_length` tokens are
    cut to their last `max_prompt_length` tokens before generation (multi-turn rollouts extend
    the cut prompt: TRL concatenates ids). `truncated_prompts` counts the prompts cut.

    A model whose every layer attends to a window (the canaries' tiny model) reads no further back
    than its reach (windowed_attention.reach), so its prompts are also cut to that: every logit of
    generation (transformers'; vLLM's kernels are not checked), the loss and the reference model is
    what the whole prompt gives, to float rounding, from fewer tokens (the curator canary's prompt is
    mostly the tool schema, beyond the reach). That cut loses nothing, so it is not counted; what
    counts the prompt's tokens (TRL's num_tokens, its context ceiling) counts the cut one."""

    truncated_prompts = 0

    def _tokenize_prompts(self, prompts):
        prompt_ids, images, multimodal = super()._tokenize_prompts(prompts)
        readable = reach(getattr(self.model, "config", None))
        if readable is not None:
            prompt_ids = [cap_ids(ids, readable)[0] for ids in prompt_ids]
        limit = getattr(self.args, "max_prompt_length", None)
        if limit is None:
            return prompt_ids, images, multimodal
        capped = [cap_ids(ids, limit) for ids in prompt_ids]
        cut = sum(was_cut for _, was_cut in capped)
        if cut:
            self.truncated_prompts += cut
            metrics = getattr(self, "_metrics", None)
            if metrics is not None:
                metrics["train" if self.model.training else "eval"]["prompts/truncated"].append(cut / len(capped))
        return [ids for ids, _ in capped], images, multimodal


def capped(base):
    """`base` (a GRPOTrainer class) with the prompt cap; a TRL whose `_tokenize_prompts` changed
    shape is a one-line error naming its version, never a silently uncapped run."""
    trl_compat.check(base, ["_tokenize_prompts"])  # training.max_prompt_length is applied through it
    if issubclass(base, PromptCap):
        return base
    return type(f"PromptCapped{base.__name__}", (PromptCap, base), {"__module__": base.__module__})


def __getattr__(name: str):
    if name == "SkillosGRPOConfig":
        return config_class()
    raise AttributeError(name)


@functools.cache
def config_class():
    """GRPOConfig plus `max_prompt_length` (built on first use: trl loads only when training does)."""
    from trl import GRPOConfig

    @dataclass
    class SkillosGRPOConfig(GRPOConfig):
        """GRPOConfig with the prompt cap TRL 1.16 dropped (applied by PromptCap)."""

        max_prompt_length: int | None = field(default=None, metadata={
            "help": "Prompts longer than this many tokens are cut to their last max_prompt_length tokens "
                    "(skillos's PromptCap; TRL 1.16 has no such field)."})

    SkillosGRPOConfig.__module__, SkillosGRPOConfig.__qualname__ = __name__, "SkillosGRPOConfig"
    return SkillosGRPOConfig
