"""A windowed model's forward and backward: transformers' sdpa against the blocked attention.

The curator canary's policy (the tiny model, every layer attending to its last 128 tokens) trains on
rollouts of ~1,700 tokens, 16 a step. sdpa scores the whole 1,700 x 1,700 matrix and masks it; the
blocked attention (evals/backends/windowed_attention.py) scores each block of 128 queries against its
256 possible keys. This bench builds that model (the tiny model with the window, random weights: the
cost does not depend on them), alternates the two implementations `repeats` times on one batch of
`batch` x `length` tokens (a quarter of them left padding on half the rows, as TRL pads prompts), and
prints each one's median seconds for a forward and backward, then the ratio blocked / sdpa against
the limit 0.7 (sdpa in the same run is the baseline).

Run by hand: `python tests/benchmarks/bench_windowed_attention.py [length] [repeats] [batch] [window]`
(defaults 1700, 5, 16, 128).
"""

import statistics
import sys
import time

import torch
from transformers import AutoModelForCausalLM

from skillos.evals.backends import windowed_attention
from skillos.evals.backends.tiny_model import build
from skillos.training.common.warmup import window_kwargs

LIMIT = 0.7


def main(length: int = 1700, repeats: int = 5, batch: int = 16, window: int = 128) -> None:
    base = str(build())
    net = AutoModelForCausalLM.from_pretrained(base, **window_kwargs(base, window))
    torch.manual_seed(0)
    ids = torch.randint(3, net.config.vocab_size, (batch, length))
    mask = torch.ones(batch, length, dtype=torch.long)
    mask[: batch // 2, : length // 4] = 0
    seconds = {"sdpa": [], windowed_attention.NAME: []}
    for k in range(repeats):
        for implementation in list(seconds)[:: 1 if k % 2 == 0 else -1]:  # alternating which goes first
            net.set_attn_implementation(implementation)
            net.zero_grad()
            started = time.perf_counter()
            net(input_ids=ids, attention_mask=mask).logits.logsumexp(-1).mean().backward()
            seconds[implementation].append(time.perf_counter() - started)
    sdpa, blocked = (statistics.median(seconds[k]) for k in ("sdpa", windowed_attention.NAME))
    print(f"{batch} x {length} tokens, window {window}, {torch.get_num_threads()} threads, {repeats} runs each: "
          f"forward and backward median sdpa {sdpa:.2f} s, blocked {blocked:.2f} s; ratio {blocked / sdpa:.2f} "
          f"({'within' if blocked / sdpa <= LIMIT else 'over'} the limit {LIMIT})")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:5]))
