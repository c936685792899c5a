"""What `skillos train` runs, keyed by `skillgate.trainer`: each entry names a module whose
`train(cfg, ledger, echo=...)` trains the config (gates already passed). A new trainer is one
line here, not a branch in the CLI or the launcher."""

from __future__ import annotations

import importlib

TRAINERS = {
    "curator": "skillos.training.trainer",  # SkillOS Algorithm 1 (the curator)
    "selector": "skillos.training.selector_trainer",  # SkillGate: GRPO + selector credit
    "selector-bc": "skillos.training.selector_baselines:train_bc",  # SFT on the gold first read
    "selector-dpo": "skillos.training.selector_baselines:train_dpo",  # gold read over misleading read
}


def trainer_for(cfg):
    """The train function for `cfg`."""
    target = TRAINERS[cfg.skillgate.trainer]
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name or "train")


def train(cfg, ledger, echo=print, **kwargs) -> dict:
    return trainer_for(cfg)(cfg, ledger, echo=echo, **kwargs)


# The arguments each trainer is built with (GRPOConfig / SFTConfig / DPOConfig and skillos's
# subclasses), as (class, keyword arguments) from the function the trainer itself builds them
# with: what the trainer receives, read by `skillos gate check --trace` without training anything.
ARGS = {
    "curator": "skillos.training.trainer:args_spec",
    "selector": "skillos.training.selector_trainer:args_spec",
    "selector-bc": "skillos.training.selector_baselines:bc_args_spec",
    "selector-dpo": "skillos.training.selector_baselines:dpo_args_spec",
}


def args_spec(cfg, cpu: bool, out) -> tuple:
    module, _, name = ARGS[cfg.skillgate.trainer].partition(":")
    return getattr(importlib.import_module(module), name)(cfg, cpu, out)
