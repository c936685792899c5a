"""Where selector GRPO starts (`skillgate.init`): as the method starts it, not from the base model.

* `base`: GRPO from `training.model` (the tiny CPU model gets its format warm-up);
* `oracle-grpo` (the method's start): outcome-only GRPO on the training games with the oracle
  as the only skill on the slate, for `skillgate.oracle_grpo_steps` steps (None: half of
  `training.max_steps`, the method's mid-training export), then exported and merged: the model
  has learned to play with the right skill before it learns to choose one;
* `gold-bc`: SFT on the gold reads: each training slate's first turn, then a reasoning block
  naming the oracle and one `read_skill` call of it (the rows `selector-bc` clones: the Gold-BC
  baseline used as a start);
* `sft`: SFT on a teacher's whole trajectories: `skillgate.teacher` (any configured model backend)
  plays each training game to its end as the slate executor (evals/envs/slate/executor.py: the
  same prompt, tool schemas and tool results as training); a trajectory whose first read is the
  oracle and that won is kept in the teacher's own words, every assistant turn of it (its
  reasoning, its reads, its actions) a row conditioned on everything before it; every other
  trajectory is dropped and counted by why (no read, a read off the slate, a relevant,
  misleading or irrelevant first read, lost after reading the oracle, unmeasured: a failed call
  or game), so the start clones what the teacher got right, never what misled it.

The SFT is TRL's SFTTrainer (`completion_only_loss`: the loss is on each row's assistant turn) for
`skillgate.sft_steps` steps at `skillgate.sft_learning_rate`; the rest of its arguments come from
`training.*` as the baselines' do. The oracle-grpo GRPO is the selector trainer itself, with the
config's `training.*` and the outcome-only profile. With a LoRA config the adapter is merged into
the weights, so GRPO trains a fresh adapter on the start. Every start is written to
OUTPUT_DIR/sft-start (an SFT start's rows to OUTPUT_DIR/sft_start.jsonl) with its summary in
OUTPUT_DIR/sft_start.json; a rerun reuses a finished one. BC and DPO (baselines.py) start
from the same `skillgate.init` as GRPO, so every arm of a comparison shares its start.
"""

from __future__ import annotations

import json
from pathlib import Path

from skillos.config.loading import with_sets
from skillos.config.schema import Config
from skillos.errors import SkillosError
from skillos.evals.backends.tool_format import for_training, training_tokenizer
from skillos.evals.envs.registry import environment
from skillos.training.common.grpo import lora_config
from skillos.training.common.prompt_cap import cap_text
from skillos.training.selector.grpo import SlateReward, build_args, dataset_rows, environment_factory, selector_classes
from skillos.training.selector.grpo import warm as format_warm
from skillos.training.selector.rows import baseline_args, prompt_messages, read_completion, render_turn
from skillos.evals.backends.tiny_model import TINY_NAME
from skillos.evals.runner import play
from skillos.files import write_atomic

SLATE = environment("slate")  # the slate's prompt, slates and metrics, through the environment protocol

START = "sft-start"


def gold_turns(setup, game_ids: list[str]) -> list[dict]:
    """gold-bc's rows: each slate's first turn -> reading its oracle."""
    return [{"game_id": gid, "messages": prompt_messages(setup, gid) + [read_completion(setup.slates[gid].oracle)],
             "read": setup.slates[gid].oracle, "role": "oracle", "source": "gold"} for gid in game_ids]


def teacher_trajectories(setup, game_ids: list[str], executor, max_steps: int) -> tuple[list[dict], dict]:
    """sft's rows from a teacher (`executor`: the slate environment's model executor) and the
    trajectories dropped, by reason: one row per assistant turn of each kept trajectory."""
    rows, dropped = [], {}
    env = setup.make_env()
    for gid in game_ids:
        game, slate = setup.games[gid], setup.slates[gid]
        episodes = []
        traj = play(env, _Recording(executor, episodes), SLATE.SlateRetriever(setup.repo, slate), game, max_steps,
                    len(slate.order))
        reads = [r.name for r in traj.reads]
        role = slate.role(reads[0]) if reads else None
        reason = ("unmeasured" if traj.won is None else "no read" if not reads
                  else f"first read {role or 'off the slate'}" if role != "oracle"
                  else "lost after reading the oracle" if not traj.won else None)
        if reason:
            dropped[reason] = dropped.get(reason, 0) + 1
            continue
        messages = episodes[-1].messages
        rows += [{"game_id": gid, "messages": messages[:i + 1], "read": reads[0], "role": role, "source": "teacher",
                  "turn": i} for i, m in enumerate(messages) if m["role"] == "assistant"]
    return rows, dropped


class _Recording:
    """An executor that keeps the episodes it starts (their messages are the trajectory)."""

    def __init__(self, executor, episodes: list):
        self.executor, self.name, self.episodes = executor, executor.name, episodes

    def new_episode(self, task, skills):
        self.episodes.append(self.executor.new_episode(task, skills))
        return self.episodes[-1]


def collect(cfg: Config, setup, game_ids: list[str], teacher=None) -> tuple[list[dict], dict]:
    """The start's rows for `skillgate.init` (the teacher: the slate executor of
    `skillgate.teacher` unless given)."""
    if cfg.skillgate.init == "gold-bc":
        return gold_turns(setup, game_ids), {}
    if cfg.skillgate.init != "sft":
        raise ValueError(f"skillgate.init {cfg.skillgate.init!r} has no SFT start")
    if teacher is None:
        teacher = environment("slate").make_executor(cfg.skillgate.teacher)
    return teacher_trajectories(setup, game_ids, teacher, cfg.env.max_steps)


def sft_args(cfg: Config, cpu: bool, out: Path):
    """The SFTConfig of the start: the baselines' arguments from `training.*`, with the start's
    own steps and learning rate, nothing saved but the final model."""
    from trl import SFTConfig

    kwargs = {k: v for k, v in baseline_args(cfg, cpu).items() if k not in ("save_steps", "save_total_limit")}
    kwargs.update(output_dir=str(out / "sft-run"), max_steps=cfg.skillgate.sft_steps,
                  learning_rate=cfg.skillgate.sft_learning_rate, save_strategy="no", completion_only_loss=True)
    return SFTConfig(**kwargs)


def start(cfg: Config, setup, game_ids: list[str], model: str, out: Path, echo, cpu: bool,
          teacher=None) -> tuple[str, dict]:
    """Train the start from `model` and return (its folder, a summary: an SFT start's rows, dropped
    turns and losses; an oracle-grpo's steps and rollouts)."""
    target = out / START
    summary_path = out / "sft_start.json"
    if (target / "config.json").is_file() and summary_path.is_file():
        made = json.loads(summary_path.read_text())
        if made.get("init") != cfg.skillgate.init:
            raise SkillosError(f"{target}: a {made.get('init')!r} start, not the {cfg.skillgate.init!r} skillgate.init asks "
                               "for; train into a new training.output_dir")
        echo(f"init {cfg.skillgate.init}: reusing {target}")
        return str(target.resolve()), made
    if cfg.skillgate.init == "oracle-grpo":
        net, tokenizer, summary = oracle_grpo(cfg, setup, model, out, echo, cpu)
    else:
        net, tokenizer, summary = _sft(cfg, setup, game_ids, model, out, echo, cpu, teacher)
    if hasattr(net, "merge_and_unload"):  # a LoRA start: GRPO trains its own adapter on the merged weights
        net = net.merge_and_unload()
    net.save_pretrained(target)
    tokenizer.save_pretrained(target)

    summary = {"init": cfg.skillgate.init, **summary, "model": str(target)}
    write_atomic(summary_path, json.dumps(summary, indent=1))
    del net  # the GPU holds the GRPO model next
    _free_memory()
    return str(target.resolve()), summary


def warmup_steps(cfg: Config) -> int:
    """The oracle-grpo's GRPO steps: skillgate.oracle_grpo_steps, else half of training.max_steps."""
    g = cfg.skillgate
    if g.oracle_grpo_steps is not None:
        return g.oracle_grpo_steps
    if not cfg.training.max_steps or cfg.training.max_steps < 2:
        raise SkillosError("skillgate.oracle_grpo_steps: unset, and half of training.max_steps "
                           f"({cfg.training.max_steps}) is no GRPO step; set one of them")
    return cfg.training.max_steps // 2


def oracle_grpo(cfg: Config, setup, model: str, out: Path, echo, cpu: bool):
    """The method's start: outcome-only GRPO with the oracle as the only skill shown, stopped at
    `warmup_steps` (its mid-training export). Returns (model, tokenizer, summary)."""
    import dataclasses

    from datasets import Dataset

    steps = warmup_steps(cfg)
    model = format_warmup(cfg, setup, model, out, echo)
    warm = with_sets(cfg, ["skillgate.selector_credit=mixed_task_reward", "skillgate.init=base",
                                         f"training.max_steps={steps}"])
    run = out / "oracle-grpo"
    echo(f"init oracle-grpo: {steps} outcome-only GRPO steps with the oracle as the only skill on the slate")
    games = [setup.games[gid] for gid in setup.games]
    reward = SlateReward(echo, "real", cfg.training.num_generations or 1, cfg.training.seed or 0)
    trainer = selector_classes()[1](
        model=model, reward_funcs=[reward], train_dataset=Dataset.from_list(dataset_rows(warm, games)),
        args=build_args(warm, cpu, run, extra={"output_dir": str(run), "save_strategy": "no"}, model=model),
        peft_config=lora_config(cfg), processing_class=for_training(model),
        environment_factory=environment_factory(dataclasses.replace(setup, oracle_only=True, no_slate=False,
                                                                    paired=False)))
    trainer.train()
    history = [h for h in trainer.state.log_history if "reward" in h]
    summary = {"steps": trainer.state.global_step, "exported_at": trainer.state.global_step,
               "rollouts": [m["success"] for m in reward.history],
               "rewards": [h["reward"] for h in history],
               "grad_norms": [h.get("grad_norm") for h in history]}
    return trainer.model, trainer.processing_class, summary


def format_warmup(cfg: Config, setup, model: str, out: Path, echo) -> str:
    """The tiny CPU model's format warm-up (it writes no tool call before it); any other model as is.
    Part of the oracle-grpo recipe, so every arm that starts there (GRPO, BC, DPO) runs it."""
    if cfg.training.model != TINY_NAME:
        return model
    return format_warm(model, out, setup, dataset_rows(cfg, list(setup.games.values())), echo)


def _sft(cfg: Config, setup, game_ids: list[str], model: str, out: Path, echo, cpu: bool, teacher=None):
    """An SFT start (sft, gold-bc) from `model`: (model, tokenizer, summary)."""
    from datasets import Dataset

    rows, dropped = collect(cfg, setup, game_ids, teacher)
    if not rows:
        raise SkillosError(f"skillgate.init {cfg.skillgate.init}: no selection turn to learn from "
                           f"({len(game_ids)} slates; dropped: {dropped or 'none'}); use init gold-bc, oracle-grpo "
                           "or another teacher")
    tokenizer = training_tokenizer(model)
    tools = SLATE.tool_schemas()
    for row in rows:
        prompt, completion = render_turn(tokenizer, row.pop("messages"), tools)
        row.update(prompt=cap_text(tokenizer, prompt, cfg.training.max_prompt_length), completion=completion)
    write_atomic(out / "sft_start.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    kept = len({r["game_id"] for r in rows})
    echo(f"init {cfg.skillgate.init}: SFT on {len(rows)} assistant turns of {kept} trajectories from {len(game_ids)} slates"
         + (f" (dropped: {dropped})" if dropped else "") + f", {cfg.skillgate.sft_steps} steps")
    from trl import SFTTrainer

    trainer = SFTTrainer(model=model, args=sft_args(cfg, cpu, out), processing_class=tokenizer,
                         train_dataset=Dataset.from_list([{"prompt": r["prompt"], "completion": r["completion"]}
                                                          for r in rows]), peft_config=lora_config(cfg))
    result = trainer.train()
    firsts = {r["game_id"]: r["read"] for r in rows}
    summary = {"rows": len(rows), "trajectories": kept, "slates": len(game_ids), "dropped": dropped,
               "reads": {name: sum(v == name for v in firsts.values()) for name in firsts.values()},
               "train_loss": result.training_loss,
               "losses": [h["loss"] for h in trainer.state.log_history if "loss" in h]}
    return trainer.model, tokenizer, summary


def _free_memory() -> None:
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
