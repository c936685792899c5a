"""env: where the games come from (household ALFWorld, reasoning problems, SkillGate slates)."""

from __future__ import annotations

from dataclasses import dataclass, field

from skillos import registry
from skillos.errors import ConfigError
from skillos.config.fields import choice

# The reasoning env's problem sets and generated families (the schema owns the names; a test
# checks them against evals/envs/reasoning's DATASETS and FAMILIES).
REASONING_DATASETS = ("generated", "aime24", "aime25", "gpqa_diamond", "deepmath")
REASONING_FAMILIES = ("remainder-of-power", "linear-equation", "arithmetic-series", "committee-count",
                      "greatest-common-divisor", "divisor-count", "prime-choice", "digit-sum-of-power")
SPLITS = ("train", "valid_seen", "valid_unseen")  # ALFWorld's split names: every environment's (its games import them)

@dataclass
class ReasoningEnvConfig:
    """env.name: reasoning (skillos.evals.envs.reasoning). Which problem set each split reads:
    `generated` (offline families, split by hash), or a hub dataset read from local files under
    data_dir (aime24, aime25, gpqa_diamond: held-out; deepmath: train). Nothing downloads."""
    datasets: dict = field(default_factory=lambda: {
        "train": "generated", "valid_seen": "generated", "valid_unseen": "generated"}, metadata={
        "help": "split -> problem set: generated (offline families, split by hash), or aime24 | aime25 | "
                "gpqa_diamond | deepmath read from local files under env.reasoning.data_dir"})
    data_dir: str = field(default="data/reasoning", metadata={
        "help": "where hub problem sets are read from, relative to the config file: DATA_DIR/<hub repo id>/..."})
    families: list | None = field(default=None, metadata={"choices": REASONING_FAMILIES, 
        "help": "generated problem families; None: every family"})
    choice_seed: int = field(default=0, metadata={"help": "GPQA options are shuffled by this recorded seed"})
    min_group_size: int | None = field(default=None, metadata={"bounds": (2, 1_000), 
        "help": "curator training: |G| drawn from [this, training.group_size], at least 2 (the first position is never "
                "scored); None: always training.group_size"})

    def rules(self, where: str) -> None:
        unknown = set(self.datasets) - set(SPLITS)
        if unknown:
            raise ConfigError(f"{where}.datasets.{sorted(map(str, unknown))[0]}: not a split (allowed: {', '.join(SPLITS)})")
        for split, name in self.datasets.items():
            choice(name, REASONING_DATASETS, f"{where}.datasets.{split}")


@dataclass
class EnvConfig:
    name: str = field(default="household", metadata={"choices": registry.ENVIRONMENTS, 
        "help": f"the environment the games come from (skillos/registry.py ENVIRONMENTS): "
                f"{registry.ENVIRONMENTS.listed()}"})
    split: str = field(default="valid_unseen", metadata={"choices": SPLITS, "help": "the held-out split the arms are measured on"})
    n_games: int = field(default=60, metadata={"bounds": (1, 10_000), "help": "held-out games each arm plays (from env.split)"})
    train_split: str = field(default="train", metadata={"choices": SPLITS, 
        "help": "games the closed_loop curator learns from before held-out"})
    n_train_games: int = field(default=60, metadata={"bounds": (0, 200_000), 
        "help": "games drawn from env.train_split: what learning arms curate on before the held-out games, "
                "and optimize's train minibatches"})
    max_steps: int = field(default=30, metadata={"bounds": (1, 1_000), 
        "help": "actions an executor may take in one game before it ends (a reasoning problem is one answer, "
                "whatever this says)"})
    seed: int = field(default=0, metadata={"bounds": (0, 2**31 - 1), 
        "help": "seed of the game (and problem, slate) draw; experiment.seeds sets it per run"})
    data: str = field(default="generated", metadata={"choices": ("generated", "official"), "help": "generated | official ($ALFWORLD_DATA)"})
    task_types: list | None = field(default=None, metadata={
        "help": "household: only these ALFWorld task types, in turn; None: all six"})
    engine_workers: int | None = field(default=None, metadata={"bounds": (0, 256),
        "help": "household: worker processes the ALFWorld engine of training rollouts runs in (evals/envs/alfworld/"
                "pool.py: a game pinned to one worker for its life, its observations the in-process engine's, "
                "parsed games cached per worker; set it to the cores to use: 2 workers ran the 32-rollout phase "
                "1.5-1.7x faster on 2 cores); None or 0: in the trainer's process, one engine call at a time "
                "(the pool spawns workers, which import a calling script again: see docs/training.md)"})
    reasoning: ReasoningEnvConfig = field(default_factory=ReasoningEnvConfig, metadata={
        "help": "the reasoning environment's settings (env.name: reasoning)"})

    def rules(self, where: str) -> None:
        if self.engine_workers and not registry.ENVIRONMENTS[self.name].engine_pool:
            raise ConfigError(f"{where}.engine_workers: the {self.name!r} environment has no game engine to run in "
                              "worker processes (skillos/registry.py ENVIRONMENTS); leave it unset")
        if self.split == self.train_split:
            raise ConfigError(f"{where}.split and {where}.train_split are both {self.split!r}: "
                              "held-out games must not be training games")
