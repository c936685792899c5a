"""Sliding-window attention computed block by block: the same numbers as transformers' sdpa, at
a cost that grows with the window, not the whole sequence.

A model whose layers attend to their last W tokens (the canaries' tiny model: canary.attention_window,
training/common/warmup.py) still pays for the whole L x L score matrix under sdpa on CPU: the window
is only a mask over it. On a curator rollout (~1,700 tokens, W 128) that was most of a GRPO step.
Here each block of W queries attends to the 2W keys that can hold its window, through the same
`scaled_dot_product_attention` and the same mask (sliced), so every allowed key is scored and no other
one: the logits are sdpa's to float rounding (tests/test_windowed_attention.py), a step's forward and
backward take about half the time (tests/benchmarks/bench_windowed_attention.py).

Only a model whose config names a window loads with it (`load_kwargs`, called where a model is
loaded: the GRPO trainers, the warm start, the hf backend; the selector's SFT and DPO baselines load
such a folder with sdpa, slower and the same); any call it cannot block (no window, a window that is
not causal, a cache whose keys are not the queries' own, a sequence within two windows, a bias or
sink added to the scores) is sdpa's call. transformers is imported when such a model loads.
"""

from __future__ import annotations

import json
from pathlib import Path

NAME = "skillos_windowed_sdpa"  # the attn_implementation transformers knows it by, once registered


def load_kwargs(path: str | Path | None) -> dict:
    """from_pretrained's arguments for the model folder `path`: this attention where its config
    declares a sliding window, nothing otherwise (nothing to gain; every other model loads as it would)."""
    if not path:
        return {}
    config = Path(path) / "config.json"
    try:
        declared = json.loads(config.read_text())
    except (OSError, ValueError):
        return {}  # not a folder with a readable config (a hub name, an adapter): loads as it would
    if not (declared.get("use_sliding_window") and declared.get("sliding_window")):
        return {}
    return windowed()


# RoPE variants whose rotation depends on the distance between two positions alone; dynamic and
# longrope pick their frequencies from the sequence's length, which a cut prompt changes
RELATIVE_ROPE = {"default", "linear", "yarn", "llama3"}


def reach(config) -> int | None:
    """How many last tokens of its input a model's next token can depend on, where every layer
    attends to a causal window: a layer reads its own position and the W - 1 before it
    (transformers' sliding window), so L layers reach L (W - 1) + 1 tokens back, and a prompt cut
    to its last `reach` tokens gives every completion token the same logits, to float rounding
    (its RoPE reads distances, not positions). None where some layer reads the whole sequence, the
    window is two-sided, the RoPE is not relative, or the config does not say."""
    window = getattr(config, "sliding_window", None)
    layers = getattr(config, "layer_types", None)
    if not (getattr(config, "use_sliding_window", False) and window and layers and getattr(config, "is_causal", True)):
        return None
    if any(kind != "sliding_attention" for kind in layers) or not _relative_rope(config):
        return None
    return len(layers) * (window - 1) + 1


def _relative_rope(config) -> bool:
    rope = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    per_layer = rope.values() if rope and all(isinstance(v, dict) for v in rope.values()) else [rope]
    return all(p.get("rope_type", p.get("type", "default")) in RELATIVE_ROPE for p in per_layer)


def windowed() -> dict:
    """from_pretrained's arguments for a model with a window: NAME, made known to transformers (its
    attention and its mask, which is sdpa's) in this process, where the model will load."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(NAME, blocked_attention)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    return {"attn_implementation": NAME}


def blocked_attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None,
                      sliding_window=None, **kwargs):
    """transformers' attention call ((batch, heads, length, dim) in, (batch, length, heads, dim) out):
    query block [s, s + W) against keys [s - W, s + W), which hold every key its window allows."""
    import torch
    from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward

    window = sliding_window
    length = query.shape[2]
    scored_otherwise = any(kwargs.get(k) is not None for k in ("position_bias", "s_aux", "softcap"))
    if (not window or attention_mask is None or key.shape[2] != length or length <= 2 * window
            or not getattr(module, "is_causal", True) or scored_otherwise):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      sliding_window=sliding_window, **kwargs)
    groups = getattr(module, "num_key_value_groups", 1)
    key, value = repeat_kv(key, groups), repeat_kv(value, groups)
    blocks = []
    for start in range(0, length, window):
        end, first = min(start + window, length), max(0, start - window)
        blocks.append(torch.nn.functional.scaled_dot_product_attention(
            query[:, :, start:end], key[:, :, first:end], value[:, :, first:end],
            attn_mask=attention_mask[:, :, start:end, first:end], dropout_p=dropout, scale=scaling))
    return torch.cat(blocks, dim=2).transpose(1, 2).contiguous(), None
