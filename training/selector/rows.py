"""The supervised rows and arguments the selector's starts (sft.py) and its BC/DPO baselines
(baselines.py) share: a slate's first turn, the turn that reads a skill, a conversation rendered
into (prompt, completion) with the model's chat template and the slate's tool schemas, the gold
reads and the DPO pairs, and the SFT/DPO arguments from `training.*`.
"""

from __future__ import annotations

from skillos.config.schema import Config
from skillos.evals.envs.registry import environment
from skillos.training.common.grpo import output_dir

SLATE = environment("slate")  # the slate's prompt, slates and metrics, through the environment protocol

DPO_REJECTED = 5  # misleading reads each gold read is preferred over (the method's pairing)


def prompt_messages(setup, game_id: str) -> list[dict]:
    text = SLATE.SlateEnv(setup).reset(game_id=game_id)
    return [{"role": "system", "content": SLATE.SYSTEM}, {"role": "user", "content": SLATE.SLATE_INSTRUCTIONS + "\n\n" + text}]


def read_completion(name: str) -> dict:
    """The assistant turn that reasons about and reads skill `name`."""
    return {"role": "assistant", "content": f"{SLATE.REASONING_OPEN}{name} fits the task.{SLATE.REASONING_CLOSE}",
            "tool_calls": [{"type": "function", "function": {"name": SLATE.READ_TOOL, "arguments": {"name": name}}}]}


def render_turn(tokenizer, messages: list[dict], tools) -> tuple[str, str]:
    """(prompt text, completion text) of a conversation whose last message is the assistant's."""
    prompt = tokenizer.apply_chat_template(messages[:-1], tools=tools, add_generation_prompt=True, tokenize=False)
    full = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False).rstrip("\n")
    if not full.startswith(prompt):
        raise ValueError("the chat template renders the assistant turn apart from its generation prompt")
    return prompt, full[len(prompt):]


def bc_dataset(setup, game_ids: list[str], tokenizer) -> list[dict]:
    """Prompt-completion rows: each slate's first turn -> reading its oracle."""
    tools = SLATE.tool_schemas()
    rows = []
    for game_id in game_ids:
        slate = setup.slates[game_id]
        prompt, completion = render_turn(tokenizer, prompt_messages(setup, game_id) + [read_completion(slate.oracle)],
                                         tools)
        rows.append({"prompt": prompt, "completion": completion, "game_id": game_id, "read": slate.oracle})
    return rows


def dpo_pairs(setup, game_ids: list[str], tokenizer) -> list[dict]:
    """Preference rows: reading the oracle (chosen) over reading each of up to DPO_REJECTED
    misleading skills of its slate, in the slate's order (rejected)."""
    tools = SLATE.tool_schemas()
    rows = []
    for game_id in game_ids:
        slate = setup.slates[game_id]
        messages = prompt_messages(setup, game_id)
        prompt, chosen = render_turn(tokenizer, messages + [read_completion(slate.oracle)], tools)
        for wrong in [n for n in slate.order if slate.role(n) == "misleading"][:DPO_REJECTED]:
            _, rejected = render_turn(tokenizer, messages + [read_completion(wrong)], tools)
            rows.append({"prompt": prompt, "chosen": chosen, "rejected": rejected, "game_id": game_id,
                         "chosen_read": slate.oracle, "rejected_read": wrong})
    return rows


def baseline_args(cfg: Config, cpu: bool) -> dict:
    """The SFT / DPO arguments every selector baseline (and the SFT start) takes from `training.*`."""
    t = cfg.training
    keys = ("learning_rate", "per_device_train_batch_size", "gradient_accumulation_steps", "max_steps",
            "save_steps", "save_total_limit", "lr_scheduler_type", "weight_decay", "max_grad_norm", "seed",
            "gradient_checkpointing", "bf16")
    kwargs = {k: getattr(t, k) for k in keys if getattr(t, k) is not None}
    kwargs.update(output_dir=str(output_dir(cfg)), logging_steps=1, report_to=cfg.training.report_to,
                  save_strategy="steps")
    if t.max_prompt_length and t.max_completion_length:
        kwargs["max_length"] = t.max_prompt_length + t.max_completion_length
    if cpu:
        kwargs.update(use_cpu=True, bf16=False)
    return kwargs
