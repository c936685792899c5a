"""A short supervised warm-up on well-formed tool calls, before GRPO.

A random-init model never emits a `<tool_call>` block, so every operation it proposes is
invalid and r_fc sits at 0 with nothing for GRPO to compare. A few optimizer steps on example
conversations (loss on the assistant turn only) teach the format; they teach nothing about
which skills help, which is GRPO's job. Used by the CPU smoke run and by the tests that need
a model that really emits tool calls.

Measured on the tiny model (2 cores, 240 steps, ~15 s): greedy decoding writes the call for
prompts like the warm-up's (same shape and length range) and garbles it for others (2 of 4
unseen made-up inputs; 0 real ALFWorld inputs when warmed on made-up ones). So training warms
up on the real first inputs of its own groups, and the tests prompt with a warm-up input.
"""

from __future__ import annotations

from pathlib import Path


def warm_up(model: str, conversations: list[list[dict]], tools: list[dict] | None, out_dir: str | Path,
            steps: int = 240, learning_rate: float = 3e-3, seed: int = 0, echo=None, decay: bool = False) -> str:
    """Fine-tune `model` on conversations whose last message is the assistant turn to learn;
    write the result (weights and tokenizer) to `out_dir` and return its path. `echo` gets a
    progress line per 10% of the steps or per 10 s, with the loss. `decay`: the rate falls linearly
    to 0 over the steps, so the last steps settle instead of jumping (the canaries' warm starts are
    sampled at temperature 1, where a noisy last step garbles the format)."""
    from skillos.safety import Ticker

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from skillos.evals.backends.tiny_model import resolve

    from skillos.evals.backends.tool_format import for_training

    path = resolve(model)
    tokenizer = for_training(path) or AutoTokenizer.from_pretrained(path)  # the format training will read
    net = AutoModelForCausalLM.from_pretrained(path)
    examples = [_example(tokenizer, conv, tools) for conv in conversations]
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(net.parameters(), lr=learning_rate)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, (lambda s: 1 - s / steps) if decay else (lambda s: 1.0))
    net.train()
    tick = Ticker(echo, "warm-up: supervised steps", steps)
    tick(0)
    for step in range(steps):
        ids, labels = examples[step % len(examples)]
        loss = net(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        tick(step + 1, extra=f"loss {loss.item():.3f}")
    net.eval()
    out = Path(out_dir)
    net.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return str(out)


TASKS = [("put a mug in the fridge", "FAILURE"), ("heat an apple and put it on the table", "SUCCESS"),
         ("clean a knife and put it in a drawer", "FAILURE"), ("examine a book with the desklamp", "SUCCESS"),
         ("put two pencils on the shelf", "FAILURE"), ("cool a potato and put it in the microwave", "SUCCESS")]
# One call for every prompt: the warm-up teaches the format, not the content. With a different
# skill per prompt the tiny model garbled the JSON on 1 prompt in 4 even after 480 steps.
CALL = {"name": "curate_and_advance", "arguments": {"operations": [
    {"op": "insert", "skill_name": "household-basics",
     "content": "Household basics: search each receptacle in turn, open closed ones, then act on the object."}]}}


def curator_examples(inputs: list[str] | None = None, system: str | None = None) -> list[list[dict]]:
    """Conversations in the training rollout's shape, each ending in one well-formed
    curate_and_advance call. `inputs` are first curator inputs (what reset returns); training
    passes the real ones of its first groups, because the tiny model writes the call only for
    prompts like those it was warmed on (`system`: the environment's curator instructions, as the
    dataset prompt has them). The default: six made-up inputs whose tasks, results
    and trajectory lengths vary (prompts of one length taught it the call at that length only)."""
    from skillos.evals.curation import CURATOR_INSTRUCTIONS, CURATOR_SYSTEM, curator_input
    from skillos.evals.trajectory import Step, Trajectory

    if inputs is None:
        moves = [Step("look", "You are in the middle of a room."), Step("go to countertop 1", "You see a mug 1."),
                 Step("open fridge 1", "You open the fridge 1."),
                 Step("take mug 1 from countertop 1", "You pick up the mug 1."),
                 Step("go to sinkbasin 1", "You see nothing."), Step("inventory", "You are carrying: a mug 1.")]
        inputs = [curator_input(Trajectory(f"warmup-{i}", task, "", steps=moves[:i + 1],
                                           won=result == "SUCCESS", retrieved=[]), 1 + i % 3, 3)
                  for i, (task, result) in enumerate(TASKS)]
    return [[{"role": "system", "content": system or CURATOR_SYSTEM},
             {"role": "user", "content": f"{CURATOR_INSTRUCTIONS['curate_and_advance']}\n\n{text}"},
             {"role": "assistant", "content": "", "tool_calls": [{"id": f"call_{i}", "type": "function",
                                                                  "function": CALL}]}]
            for i, text in enumerate(inputs)]


def _example(tokenizer, conversation: list[dict], tools):
    import torch

    if conversation[-1]["role"] != "assistant":
        raise ValueError("a warm-up conversation ends with the assistant turn to learn")
    prompt = tokenizer.apply_chat_template(conversation[:-1], tools=tools, add_generation_prompt=True, tokenize=False)
    full = tokenizer.apply_chat_template(conversation, tools=tools, tokenize=False).rstrip("\n")
    if not full.startswith(prompt):
        raise ValueError("the chat template renders the assistant turn apart from its generation prompt")
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    completion_ids = tokenizer(full[len(prompt):], add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prompt_ids + completion_ids])
    labels = torch.tensor([[-100] * len(prompt_ids) + completion_ids])  # learn the reply, not the prompt
    return ids, labels
