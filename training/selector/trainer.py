"""SkillGate's selector-credit GRPO: the executor (the model being trained) plays a task with
a skill slate (`SlateEnv`: `read_skill`, `act`) and learns which skill to read.

`SelectorGRPOTrainer` (training/selector/grpo.py) replaces TRL's outcome advantage with per-token
advantages built by training/selector/credit.py: the outcome advantage on action tokens,
`selector_coef` x the profile's selector advantage on the selection spans (training/selector/credit.py
says what each profile computes). The outcome-only profiles
(`no_skill`, `mixed_task_reward`) leave TRL's advantage untouched. Every read is logged with its
token span to OUTPUT_DIR/selection.jsonl. `skillgate.init` says where GRPO starts: the base
model, or an SFT on a teacher's selection turns or on the gold reads (training/selector/sft.py).
"""

from __future__ import annotations

from pathlib import Path

from skillos.config.schema import Config
from skillos.evals.backends.tool_format import for_training
from skillos.evals.envs.registry import environment
from skillos.training.common.grpo import (archive_callback, archived, crash_recorded, fit, guarded, lora_config,
                                         recorded_run)
from skillos.training.selector.grpo import SURFACE, SlateReward, build_args, dataset_rows, environment_factory, \
    selector_classes, warm
from skillos.training.selector.sft import start
from skillos.evals.arms import load_games
from skillos.evals.backends.tiny_model import TINY_NAME, resolve

SLATE = environment("slate")  # the slate's prompt, slates and metrics, through the environment protocol


def train(cfg: Config, ledger, echo=print, warmup: bool = True, signal: str = "real", env_class=None) -> dict:
    """Selector-credit GRPO for `cfg` (gates already passed); returns the run's summary.
    `signal` "shuffled" / "flipped": rewards and selection utilities permuted within each group,
    or negated: the learning canary's negative controls (training/canary). `env_class`: the
    environment TRL plays (default SlateEnv; the canary's miniature: TaskLastSlateEnv)."""
    return guarded(cfg, echo, lambda out, cpu: _train(cfg, ledger, echo, warmup, out, cpu, signal, env_class))


def _train(cfg: Config, ledger, echo, warmup: bool, out: Path, cpu: bool, signal: str = "real",
           env_class=None) -> dict:
    from datasets import Dataset

    games = load_games(cfg, cfg.env.train_split, cfg.env.n_train_games)
    setup = SLATE.make_slate_setup(cfg, games, out)
    echo(SLATE.render_audit(setup.listing_audit))
    rows = dataset_rows(cfg, games)
    model, init = resolve(cfg.training.model), None
    # The tiny CPU model cannot call a tool before its format warm-up; an SFT start teaches the call itself.
    if warmup and cfg.training.model == TINY_NAME and cfg.skillgate.init == "base":
        model = warm(model, out, setup, rows, echo)
    if cfg.skillgate.init != "base":  # the method's start (training/selector/sft.py)
        model, init = start(cfg, setup, [g.id for g in games], model, out, echo, cpu)
    ledger, run_id = recorded_run(cfg, ledger)
    reward = SlateReward(echo, signal, cfg.training.num_generations or 1, cfg.training.seed or 0)
    with crash_recorded(ledger, run_id):
        trainer_cls = selector_classes()[1]
        trainer = trainer_cls(
            model=model, reward_funcs=[reward], args=build_args(cfg, cpu, out, model=model),
            train_dataset=Dataset.from_list(rows), peft_config=lora_config(cfg),
            processing_class=for_training(model),  # None: TRL's own; a template without tools: tool_format's
            environment_factory=environment_factory(setup, env_class),
            callbacks=[archive_callback(cfg, ledger, run_id, echo, surface=SURFACE)])
        trainer.signal = signal
    learned = fit(trainer, cfg, out, ledger, run_id, echo)

    return {"run_id": run_id, "output_dir": str(out), "checkpoints": archived(out), "steps": reward.history,
            "slate": str(out / "slate"), "slates": SLATE.composition(list(setup.slates.values())),
            "listing_audit": setup.listing_audit,
            "profile": cfg.skillgate.selector_credit, "init": init or {"init": "base", "model": model},
            "signal": learned}


