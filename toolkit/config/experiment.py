"""experiment: what the experiment is and what it claims."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from skillos.errors import ConfigError

# the name becomes a folder name (eval.output_dir/NAME-STAMP, checkpoints/NAME) and a ledger key
EXPERIMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


@dataclass
class ExperimentConfig:
    name: str = field(default="experiment", metadata={
        "help": "the experiment's name in the ledger and in output folders (eval.output_dir/NAME-STAMP, "
                "checkpoints/NAME): 1-100 letters, digits, '.', '_' or '-'"})
    hypothesis: str = field(default="", metadata={
        "help": "what the experiment tests, in a sentence: recorded in the ledger, the report and the approval plan"})
    expected_effect: float | None = field(default=None, metadata={
        "help": "the improvement the hypothesis claims (0.10 = 10 pts)", "bounds": (1e-6, 1.0)})
    expected_discordance: float | None = field(default=None, metadata={
        "help": "share of discordant pairs, from a pilot (MDE plan)", "bounds": (1e-6, 1.0)})
    fixes_failure: int | None = field(default=None, metadata={
        "help": "a fix run: the ledger failure it addresses (gate 6)", "bounds": (1, 2**62)})
    fix_metric: str | None = field(default=None, metadata={
        "help": "a fix run: the metric it should move"})
    before_run: int | None = field(default=None, metadata={
        "help": "a fix run: the ledger run measured before the fix", "bounds": (1, 2**62)})
    seeds: list | None = field(default=None, metadata={
        "help": "seed replicates: one run of this experiment per seed (each sets env.seed, and training.seed "
                "when the config trains); with `matrix:`, every combination runs at every seed. All runs are "
                "one experiment in the ledger and one family for the correction"})

    def rules(self, where: str) -> None:
        if not isinstance(self.name, str) or not EXPERIMENT_NAME.fullmatch(self.name):
            raise ConfigError(f"{where}.name: {str(self.name)[:60]!r} must be 1-100 letters, digits, "
                              "'.', '_' or '-', starting with a letter or digit (it becomes a folder name)")
