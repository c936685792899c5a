"""What `skillos train` runs, keyed by `skillgate.trainer`: each entry of TRAINERS
(skillos/registry.py, beside the backends and environments) names the function that trains the
config, `train(cfg, ledger, echo=...)` (gates already passed), and the one that builds its
arguments. A new trainer is one entry there, not a branch in the CLI or the launcher."""

from __future__ import annotations

from skillos.registry import TRAINERS, load


def trainer_for(cfg):
    """The train function for `cfg`."""
    return TRAINERS[cfg.skillgate.trainer].train_function()


def train(cfg, ledger, echo=print, **kwargs) -> dict:
    return trainer_for(cfg)(cfg, ledger, echo=echo, **kwargs)


def args_spec(cfg, cpu: bool, out) -> tuple:
    """The arguments the config's trainer is built with (GRPOConfig / SFTConfig / DPOConfig and
    skillos's subclasses), as (class, keyword arguments) from the function the trainer itself
    builds them with: what the trainer receives, read by `skillos gate check --trace` without
    training anything."""
    return load(TRAINERS[cfg.skillgate.trainer].args_spec)(cfg, cpu, out)
