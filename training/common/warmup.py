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

import json
from pathlib import Path

from skillos.config.schema import Config
from skillos.errors import SkillosError

from skillos.evals.backends.tool_format import training_tokenizer
from skillos.evals.backends.tiny_model import TINY_NAME, resolve
from skillos.evals.backends.windowed_attention import windowed
from skillos.evals.curation import CURATOR_INSTRUCTIONS, CURATOR_SYSTEM, curator_input
from skillos.evals.trajectory import Step, Trajectory
from skillos.safety import Ticker


def warm_up(model: str, conversations: list[list[dict]], tools: list[dict] | None, out_dir: str | Path,
            steps: int = 240, learning_rate: float = 3e-3, seed: int = 0, echo=None, decay: bool = False,
            attention_window: int | None = None, weigh_content: bool = False, call_tokens: bool = False) -> str:
    """Fine-tune `model` on conversations whose last message is the assistant turn to learn;
    write the result (weights and tokenizer) to `out_dir` and return its path. `echo` gets a
    progress line per 10% of the steps or per 10 s, with the loss. `decay`: the rate falls linearly
    to 0 over the steps, so the last steps settle instead of jumping (the canaries' warm starts are
    sampled at temperature 1, where a noisy last step garbles the format). `attention_window`: the
    model attends to its last N tokens in every layer from here on (its saved config says so).
    `weigh_content`: the text a turn writes before its tool call carries half the turn's loss (a
    canary's warm start: what the turn says of the task, a few tokens that differ by input in a
    turn that is otherwise the same whatever the input, were lost in the whole turn's loss:
    not learned in 1,200 steps, measured); its report says whether it was learned. `call_tokens`:
    every tool call's text the conversations teach is added to the vocabulary first, its frame and
    each element of its list arguments one token each (config canary.call_tokens)."""
    import torch
    from transformers import AutoModelForCausalLM

    path = resolve(model)
    tokenizer = training_tokenizer(path)  # the format training will read
    net = AutoModelForCausalLM.from_pretrained(path, **window_kwargs(path, attention_window))
    torch.manual_seed(seed)  # the new phrases' embeddings are drawn too
    if call_tokens:
        _add_phrases(tokenizer, net, [p for conv in conversations for p in _call_texts(tokenizer, conv, tools)])
    device = "cuda" if torch.cuda.is_available() else "cpu"  # the box the launch will use, where it has a GPU
    net.to(device)
    examples = [tuple(None if t is None else t.to(device) for t in _example(tokenizer, conv, tools, weigh_content))
                for conv in conversations]
    _fit(net, examples, steps, learning_rate, decay, echo, "warm-up: supervised steps")
    read = None
    if weigh_content:
        said = [x for x in examples if x[2] is not None]
        read = {"learned": _learned(net, said), "turns": len(said), "steps": steps}
        if echo:
            echo(f"warm-up: what each turn says before its call {'learned' if read['learned'] else 'NOT learned'} "
                 f"(the most likely at every token of all {len(said)} turns that say something)")
    out = Path(out_dir)
    net.save_pretrained(out)
    tokenizer.save_pretrained(out)
    if read is not None:  # what the canary reports of its warm start
        (out / READING_FILE).write_text(json.dumps(read))
    return str(out)


READING_FILE = "warm-start-reading.json"


def _call_texts(tokenizer, conversation: list[dict], tools) -> list[str]:
    """The texts of the last turn's tool calls as the chat template writes them, cut into the call's
    frame and each element of its list arguments (a curator's operations), so that one sampled token
    is one operation and the frame around any list of them is a few."""
    _, reply = _rendered(tokenizer, conversation, tools)
    texts, at = [], 0
    for call in conversation[-1].get("tool_calls") or []:
        arguments = call["function"]["arguments"]
        arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
        start = reply.find("<tool_call>", at)
        end = reply.find("</tool_call>", max(start, 0))
        if start < 0 or end < 0:
            raise SkillosError("canary.call_tokens: the chat template writes no <tool_call> block for a taught call; "
                               "call tokens need a template that does (the tiny model's)")
        at = end + len("</tool_call>")
        block = reply[start:at]
        items = [json.dumps(x, ensure_ascii=False) for v in arguments.values() if isinstance(v, list) for x in v]
        items = [x for x in items if x in block]  # as the template wrote them (tojson is json.dumps)
        if not items:
            texts.append(block)
            continue
        # the frame's two ends and each item: what lies between items (", ") stays spelled, so that
        # no token matches text elsewhere in a prompt
        texts += [block[:block.index(items[0])], *items, block[block.rindex(items[-1]) + len(items[-1]):]]
    return [t for t in texts if t.strip()]


def _add_phrases(tokenizer, net, phrases) -> None:
    """Each text in `phrases` one token of `tokenizer`, matched before its own rules split the text,
    and `net`'s embeddings grown to hold them (drawn from the old rows' mean and covariance)."""
    from tokenizers import AddedToken

    tokenizer.add_tokens([AddedToken(p, normalized=False, special=False) for p in sorted(set(phrases))])
    net.resize_token_embeddings(len(tokenizer))


def _learned(net, examples: list) -> bool:
    """Whether the model's most likely next token is the labelled one at every token each example's
    turn says before its call (teacher-forced, one forward pass each)."""
    import torch

    net.eval()
    try:
        with torch.no_grad():
            for ids, labels, _, said in examples:
                predicted = net(input_ids=ids).logits[0, :-1].argmax(-1)
                wanted, mask = labels[0, 1:], said[0, 1:]
                if not bool((predicted[mask] == wanted[mask]).all()):
                    return False
        return True
    finally:
        net.train()


def _fit(net, examples: list, steps: int, learning_rate: float, decay: bool, echo, what: str) -> None:
    """Train `steps` supervised steps (AdamW; `decay`: the rate falls linearly to 0), each on one
    example's weighted loss over its labelled tokens."""
    import torch

    optimizer = torch.optim.AdamW(net.parameters(), lr=learning_rate)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, (lambda s: 1 - s / steps) if decay else (lambda s: 1.0))
    net.train()
    tick = Ticker(echo, what, steps)
    tick(0)
    for step in range(steps):
        ids, labels, weights, _ = examples[step % len(examples)]
        if weights is None:  # every labelled token alike: the model's own loss
            loss = net(input_ids=ids, labels=labels).loss
        else:
            logits = net(input_ids=ids).logits[0, :-1]
            wanted, w = labels[0, 1:], weights[0, 1:]
            token_loss = torch.nn.functional.cross_entropy(logits, wanted.clamp(min=0), reduction="none")
            loss = (token_loss * w).sum() / w.sum()
        loss.backward()
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        tick(step + 1, extra=f"loss {loss.item():.3f}")
    net.eval()


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


def window_kwargs(path: str, window: int | None) -> dict:
    """from_pretrained's arguments for the model at `path` made to attend, in every layer, to its last
    `window` tokens (None: as it is), with the blocked attention that makes the window cheap."""
    if window is None:
        return {}
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(path)
    config.use_sliding_window, config.sliding_window, config.max_window_layers = True, window, 0
    config.layer_types = ["sliding_attention"] * config.num_hidden_layers
    return {"config": config, **windowed()}


def _rendered(tokenizer, conversation: list[dict], tools) -> tuple[str, str]:
    """(prompt, reply) of a conversation as the chat template writes it: its generation prompt, and
    the last (assistant) turn after it."""
    if conversation[-1]["role"] != "assistant":
        raise ValueError("a warm-up conversation ends with the assistant turn to learn")
    prompt = tokenizer.apply_chat_template(conversation[:-1], tools=tools, add_generation_prompt=True, tokenize=False)
    full = tokenizer.apply_chat_template(conversation, tools=tools, tokenize=False).rstrip("\n")
    if not full.startswith(prompt):
        raise ValueError("the chat template renders the assistant turn apart from its generation prompt")
    return prompt, full[len(prompt):]


def _example(tokenizer, conversation: list[dict], tools, weigh_content: bool = False):
    """(ids, labels, weights, said) of a conversation: the loss on its last (assistant) turn (labels
    -100 on the prompt); weights None: every labelled token alike; `weigh_content`: the turn's
    text before its tool call weighted so that it carries half the turn's loss, and `said` marks
    those tokens (None where the turn says nothing)."""
    import torch

    prompt, reply = _rendered(tokenizer, conversation, tools)
    content = (conversation[-1].get("content") or "") if weigh_content else ""
    said = tokenizer(content, add_special_tokens=False)["input_ids"] if content and reply.startswith(content) else []
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    rest = tokenizer(reply[len(content):] if said else reply, add_special_tokens=False)["input_ids"]
    completion_ids = said + rest
    ids = torch.tensor([prompt_ids + completion_ids])
    labels = torch.tensor([[-100] * len(prompt_ids) + completion_ids])  # learn the reply, not the prompt
    if not said:
        return ids, labels, None, None  # every labelled token weighs 1
    weight = len(rest) / len(said)  # the words said weigh as much as the rest of the turn
    weights = torch.tensor([[0.0] * len(prompt_ids) + [weight] * len(said) + [1.0] * len(rest)])
    marked = torch.tensor([[False] * len(prompt_ids) + [True] * len(said) + [False] * len(rest)])
    return ids, labels, weights, marked


# The format warm-up a GRPO trainer runs first where training.format_warmup_steps is None: the tiny
# model never writes a call on its own; a real model needs none.
WARMUP_STEPS = 240
WARMUP_RATE = 3e-3  # the tiny model's


def format_warmup_steps(cfg: Config) -> int:
    """training.format_warmup_steps, its None read: WARMUP_STEPS for the tiny model, none for others."""
    steps = cfg.training.format_warmup_steps
    return (WARMUP_STEPS if cfg.training.model == TINY_NAME else 0) if steps is None else steps
