"""eval and retrieval: the arms played on the same held-out games, the control, the statistics, and
how skills are picked for a game."""

from __future__ import annotations

from dataclasses import dataclass, field

from skillos.errors import ConfigError
from skillos.config.fields import did_you_mean

RETRIEVAL_MODES = ("bm25", "shuffled")
ARMS = ("no_memory", "closed_loop", "static_repo", "shuffled")


@dataclass
class RetrievalConfig:
    top_k: int = field(default=5, metadata={"bounds": (0, 100), 
        "help": "skills retrieved from the repo for each game, shown to the executor"})
    mode: str = field(default="bm25", metadata={"choices": RETRIEVAL_MODES, 
        "help": "bm25 (skills ranked by the task) | shuffled (a random pick: the control for retrieval)"})


@dataclass
class ControlConfig:
    arm: str = field(default="no_memory", metadata={
        "help": "the arm every other arm is compared to; one of eval.arms (measured in the same run)"})
    max_age_days: float = field(default=7.0, metadata={"bounds": (0.0, 36_500.0), "help": "a control older than this is stale (gate 4)"})


@dataclass
class EvalConfig:
    arms: list = field(default_factory=lambda: ["no_memory", "closed_loop"], metadata={
        "help": "the arms played on the same held-out games: no_memory | closed_loop | static_repo | shuffled | "
                "repo:NAME (eval.static_repos) | curator:NAME (eval.curators)"})
    control: ControlConfig = field(default_factory=ControlConfig, metadata={"shorthand": "arm", 
        "help": "the control arm and how old it may be (or just the arm's name)"})
    max_error_rate: float = field(default=0.02, metadata={
        "help": "unmeasured share above which an arm aborts (gate 2)"})
    alpha: float = field(default=0.05, metadata={"bounds": (1e-9, 0.999), 
        "help": "significance level of the paired tests (corrected across the family)"})
    power: float = field(default=0.8, metadata={"bounds": (0.01, 0.9999), "help": "target power of the minimum-detectable-effect plan"})
    bootstrap: int = field(default=10_000, metadata={"bounds": (100, 1_000_000), "help": "bootstrap resamples for confidence intervals"})
    static_repo: str | None = field(default=None, metadata={"help": "skill folder for the static_repo arm"})
    static_repos: dict = field(default_factory=dict, metadata={
        "help": 'name -> folder, for arms "repo:NAME" (sweeps)'})
    curators: dict = field(default_factory=dict, metadata={
        "help": 'name -> checkpoint, for arms "curator:NAME" (sweeps)'})
    output_dir: str = field(default="runs", metadata={
        "help": "where run folders go (relative to the working directory)"})
    workers: int = field(default=0, metadata={"bounds": (0, 256), "help": "arms played in parallel processes; 0: one per CPU core"})
    concurrency: int = field(default=1, metadata={"bounds": (1, 1024), 
        "help": "games in flight per arm (model backends: 16-64; heuristic: 1)"})
    wave_size: int = field(default=1, metadata={"bounds": (1, 10_000), 
        "help": "learning arms: games played on one repo snapshot before curating"})
    trials: int = field(default=1, metadata={"bounds": (1, 100),
        "help": "plays of each held-out game per arm, each with its own sampling seed; a game's trials are averaged "
                "into one unit (the paired tests are over games, never over plays)"})

    def rules(self, where: str) -> None:
        if not self.arms:
            raise ConfigError(f"{where}.arms: name at least one arm")
        for i, arm in enumerate(self.arms):
            if str(arm).startswith("repo:"):
                if arm[5:] not in self.static_repos:
                    raise ConfigError(f"{where}.arms[{i}]: {arm!r} names no folder in {where}.static_repos")
            elif str(arm).startswith("curator:"):
                if arm[8:] not in self.curators:
                    raise ConfigError(f"{where}.arms[{i}]: {arm!r} names no checkpoint in {where}.curators")
            elif arm not in ARMS:
                raise ConfigError(f"{where}.arms[{i}]: unknown arm {arm!r}{did_you_mean(str(arm), ARMS)}")
        if len(set(self.arms)) != len(self.arms):
            raise ConfigError(f"{where}.arms: an arm is listed twice")
        if self.control.arm not in self.arms:
            raise ConfigError(f"{where}.control: {self.control.arm!r} is not among {where}.arms "
                              "(the control must be measured in the same run)")
        if not 0 <= self.max_error_rate < 1:
            raise ConfigError(f"{where}.max_error_rate: a share in [0, 1), got {self.max_error_rate}")
        if "static_repo" in self.arms and not self.static_repo:
            raise ConfigError(f"{where}.static_repo: the static_repo arm needs a skill folder path")
