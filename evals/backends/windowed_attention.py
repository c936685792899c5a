"""Sliding-window attention computed block by block: the same numbers as transformers' sdpa, at
a cost that grows with the window, not the whole sequence.

A model whose layers attend to their last W tokens (the canaries' tiny model: canary.attention_window,
training/common/warmup.py) still pays for the whole L x L score matrix under sdpa on CPU: the window
is only a mask over it. On a curator rollout (~1,700 tokens, W 128) that was most of a GRPO step.
Here each block of W queries attends to the 2W keys that can hold its window, through the same
`scaled_dot_product_attention` and the same mask (sliced), so every allowed key is scored and no other
one: the logits are sdpa's to float rounding (tests/test_windowed_attention.py), a step's forward and
backward take about half the time (tests/benchmarks/bench_windowed_attention.py).

Only a model whose config names a window loads with it (`load_kwargs`); any call it cannot block (no
window, a cache whose keys are not the queries' own, a sequence within two windows) is sdpa's call.
transformers is imported when a model is loaded, never by the CLI.
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


def reach(config) -> int | None:
    """How many last tokens of its input a model's next token can depend on, where every layer
    attends to a window: a layer reads its own position and the W - 1 before it (transformers'
    sliding window), so L layers reach L (W - 1) + 1 tokens back, and a prompt cut to its last
    `reach` tokens gives every completion token the same logits (RoPE reads relative positions).
    None where some layer reads the whole sequence, or the config does not say."""
    window = getattr(config, "sliding_window", None)
    layers = getattr(config, "layer_types", None)
    if not (getattr(config, "use_sliding_window", False) and window and layers):
        return None
    if any(kind != "sliding_attention" for kind in layers):
        return None
    return len(layers) * (window - 1) + 1


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
    if not window or attention_mask is None or key.shape[2] != length or length <= 2 * window:
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
