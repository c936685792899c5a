"""SkillGate's selection baselines, from the same frozen slates as the selector trainer:

* behaviour cloning on the gold first read (`skillgate.trainer: selector-bc`, TRL's SFTTrainer):
  the executor's first turn, then a reasoning block naming the oracle and one read_skill call
  of the oracle; loss on the completion only;
* DPO of gold-read over misleading-read (`selector-dpo`, TRL's DPOTrainer): the same prompt,
  chosen = reading the oracle, rejected = reading a misleading skill; each gold read is paired
  with up to `DPO_REJECTED` (5, as the method does) misleading skills of its slate.

Both start where the GRPO arms do (`skillgate.init`, training/selector/sft.py), so a comparison of
BC, DPO and the GRPO profiles shares one initialisation.

Examples are rendered with the model's chat template and the tool schemas TRL builds from
SlateEnv, so the baselines learn the exact prompt and surface the selector trains and is
evaluated on. The training arguments come from `training.*`.
"""

from __future__ import annotations

import json
from pathlib import Path

from skillos.config.schema import Config
from skillos.evals.backends.tool_format import training_tokenizer
from skillos.evals.envs.registry import environment
from skillos.training.common import signal
from skillos.training.common.grpo import (archive_callback, archived, crash_recorded, is_main_process, lora_config,
                                         on_cpu, output_dir, recorded_run)
from skillos.training.common.prompt_cap import cap_text
from skillos.training.selector.rows import baseline_args, bc_dataset, dpo_pairs
from skillos.training.selector.sft import start
from skillos.evals.arms import load_games
from skillos.evals.backends.tiny_model import resolve

SLATE = environment("slate")  # the slate's prompt, slates and metrics, through the environment protocol

SURFACE = "read_skill,act"


def args_spec(cfg: Config, cpu: bool, kind: str) -> tuple:
    """(class, keyword arguments) of the SFT (bc) or DPO arguments of a baseline run."""
    if kind == "bc":
        from trl import SFTConfig

        return SFTConfig, {**baseline_args(cfg, cpu), "completion_only_loss": True}
    from trl import DPOConfig

    beta = {"beta": cfg.training.beta} if cfg.training.beta is not None else {}
    return DPOConfig, {**baseline_args(cfg, cpu), **beta}


def build_args(cfg: Config, cpu: bool, kind: str, extra: dict | None = None):
    """The SFT (bc) or DPO arguments of a baseline run (what `skillos gate check --trace` reads)."""
    cls, kwargs = args_spec(cfg, cpu, kind)
    return cls(**{**kwargs, **(extra or {})})


def bc_args_spec(cfg: Config, cpu: bool, out=None) -> tuple:
    return args_spec(cfg, cpu, "bc")


def dpo_args_spec(cfg: Config, cpu: bool, out=None) -> tuple:
    return args_spec(cfg, cpu, "dpo")


def _train(cfg: Config, ledger, echo, kind: str) -> dict:
    from datasets import Dataset

    cpu = on_cpu(cfg)
    out = output_dir(cfg)
    out.mkdir(parents=True, exist_ok=True)
    games = load_games(cfg, cfg.env.train_split, cfg.env.n_train_games)
    setup = SLATE.make_slate_setup(cfg, games, out)
    ids = [g.id for g in games]
    model, init = resolve(cfg.training.model), None
    if cfg.skillgate.init != "base":  # the same start as the GRPO arms, so the comparison shares its init
        model, init = start(cfg, setup, ids, model, out, echo, cpu)
    tokenizer = training_tokenizer(model)
    rows = bc_dataset(setup, ids, tokenizer) if kind == "bc" else dpo_pairs(setup, ids, tokenizer)
    for row in rows:  # training.max_prompt_length, applied (SFTConfig / DPOConfig have no prompt cap)
        row["prompt"] = cap_text(tokenizer, row["prompt"], cfg.training.max_prompt_length)
    (out / f"{kind}_dataset.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    echo(f"{kind}: {len(rows)} examples from {len(ids)} slates")
    ledger, run_id = recorded_run(cfg, ledger)
    columns = ("prompt", "completion") if kind == "bc" else ("prompt", "chosen", "rejected")
    dataset = Dataset.from_list([{k: r[k] for k in columns} for r in rows])
    watch = signal.for_run(cfg, echo, is_main_process())
    callbacks = [archive_callback(cfg, ledger, run_id, echo, surface=SURFACE), watch.callback()]
    with crash_recorded(ledger, run_id):  # the run is this experiment's whole launch: both end together
        if kind == "bc":
            from trl import SFTTrainer

            args = build_args(cfg, cpu, kind)
            trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                                 peft_config=lora_config(cfg), callbacks=callbacks)
        else:
            from trl import DPOTrainer

            args = build_args(cfg, cpu, kind)
            trainer = DPOTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                                 peft_config=lora_config(cfg), callbacks=callbacks)
        result = trainer.train()
    learned = signal.conclude(watch, ledger, run_id, echo)
    if ledger is not None:
        ledger.end_experiment_run(run_id, "finished", learned["line"])
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    return {"run_id": run_id, "output_dir": str(out), "checkpoints": archived(out), "steps": losses,
            "train_loss": result.training_loss, "examples": len(rows), "slate": str(Path(out) / "slate"),
            "init": init or {"init": "base", "model": model}, "signal": learned}


def train_bc(cfg: Config, ledger, echo=print, **_) -> dict:
    return _train(cfg, ledger, echo, "bc")


def train_dpo(cfg: Config, ledger, echo=print, **_) -> dict:
    return _train(cfg, ledger, echo, "dpo")
