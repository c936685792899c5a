"""optimize: text-space skill optimization (SkillOpt-style), and the acceptance gate sleep shares."""

from __future__ import annotations

from dataclasses import dataclass, field

from skillos.errors import ConfigError
from skillos.config.backend import BackendConfig
from skillos.config.env import SPLITS

OPTIMIZE_TARGETS = ("repo", "document")  # what `skillos optimize` trains: a skill folder, or one SKILL.md
SCHEDULES = ("cosine", "linear", "constant")  # how a textual learning rate decays (optimize and sleep)
GATE_MODES = ("paired", "strict")  # evals/stats.py's gate modes (a test checks they agree)


@dataclass
class OptimizeGateConfig:
    mode: str = field(default="strict", metadata={"choices": GATE_MODES, 
        "help": "strict: the method's rule (SkillOpt and SkillOpt-Sleep), accept a candidate whose held-out "
                "score is higher, any gain; paired: ours, the mean paired difference must exceed k·SE, so a copy "
                "of the incumbent or one flipped task on a small split is not accepted (a stricter bar: it can "
                "reject a real small gain, and the run prints the smallest it can accept)"})
    k: float = field(default=2.0, metadata={"bounds": (0.0, 100.0), 
        "help": "paired mode: standard errors the mean paired gain must exceed for a candidate to be accepted"})
    max_unmeasured: float = field(default=0.1, metadata={"bounds": (0.0, 1.0), 
        "help": "share of validation tasks unmeasured above which a verdict is indecisive"})


@dataclass
class OptimizeConfig:
    """skillos optimize (text-space, SkillOpt-style). Train minibatches come from env.train_split,
    candidates are gated on the validation split, and env.split is the sealed test split."""
    optimizer: BackendConfig = field(default_factory=BackendConfig, metadata={
        "help": "who proposes edits: heuristic, or a model backend"})
    seed_skills: str | None = field(default=None, metadata={
        "help": "the starting skill folder (relative to the config); None: empty"})
    target: str = field(default="repo", metadata={"choices": OPTIMIZE_TARGETS, 
        "help": "repo: train a skill folder (edits add, replace or delete whole skills); document: train ONE "
                "SKILL.md (optimize.document), its sections (markdown headings) the edit units, and write "
                "best_skill.md with its history (SkillOpt's setting)"})
    document: str | None = field(default=None, metadata={
        "help": "target document: the SKILL.md (or a folder holding one) to train, relative to the config; None: "
                "the one skill of optimize.seed_skills, or a new document with only a title"})
    epochs: int = field(default=2, metadata={"bounds": (1, 1_000), "help": "passes over the train games (env.n_train_games)"})
    minibatch_size: int = field(default=6, metadata={"bounds": (1, 10_000), 
        "help": "train games played per step, whose failures the proposer reads"})
    max_lines: int = field(default=40, metadata={"bounds": (1, 100_000), 
        "help": "the textual learning rate, in changed lines of skill text (difflib over the old and new text; a "
                "rewritten line counts 1) one step may make, at the first step; an edit that does not fit what is "
                "left of the step's budget is refused and counted, so a whole-skill replace needs a budget that "
                "covers every line it changes"})
    min_lines: int | None = field(default=None, metadata={"bounds": (1, 100_000), 
        "help": "... decaying to this many changed lines at the last step; None: half of optimize.max_lines"})
    schedule: str = field(default="cosine", metadata={"choices": SCHEDULES, 
        "help": "how the line budget decays from max_lines to min_lines: cosine | linear | constant"})
    slow_update: bool = field(default=False, metadata={
        "help": "at each epoch's end, one more gated candidate: the skill with cross-epoch guidance written into its "
                "protected block (<!-- skillos:slow-update --> ... <!-- /skillos:slow-update -->, which ordinary "
                "steps never edit), and the epoch's editing lessons appended to the meta skill; both versioned in "
                "the run folder"})
    meta_skill: str | None = field(default=None, metadata={
        "help": "the meta skill (how to edit skills) the model-backed proposer reads, a SKILL.md relative to the "
                "config; None: training/configs/meta-skill/SKILL.md"})
    validation_split: str = field(default="valid_seen", metadata={"choices": SPLITS, 
        "help": "the split candidates are gated on (not env.split, the sealed test split)"})
    n_validation: int = field(default=30, metadata={"bounds": (1, 10_000), "help": "validation tasks each candidate is gated on"})
    gate: OptimizeGateConfig = field(default_factory=OptimizeGateConfig, metadata={
        "help": "when a candidate is accepted over the incumbent"})

    @property
    def last_lines(self) -> int:
        """The budget of the last step: optimize.min_lines, else half of optimize.max_lines."""
        return self.min_lines if self.min_lines is not None else max(1, self.max_lines // 2)

    def rules(self, where: str) -> None:
        if self.min_lines is not None and self.min_lines > self.max_lines:
            raise ConfigError(f"{where}.min_lines ({self.min_lines}) is above {where}.max_lines ({self.max_lines})")
        if self.document is not None and self.target != "document":
            raise ConfigError(f"{where}.document: set only with {where}.target: document")
