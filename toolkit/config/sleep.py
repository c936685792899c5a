"""sleep: learn one skill from the agent's own Claude Code and Codex sessions (SkillOpt-Sleep), and
sleep transfer: the skill inside a real coding-agent CLI."""

from __future__ import annotations

from dataclasses import dataclass, field

from skillos import registry
from skillos.errors import ConfigError
from skillos.config.backend import BackendConfig
from skillos.config.optimize import SCHEDULES, OptimizeGateConfig

DREAM_FRAMINGS = 6  # the rewordings training/textopt/sleep/dream.py has: a task gets at most this many dreams


@dataclass
class SleepBudgetConfig:
    """Hard caps per night: a call that could pass one is not made; the night stops cleanly."""
    max_calls: int = field(default=300, metadata={"bounds": (1, 10_000_000), "help": "model calls (replays, judge, optimizer) in one night"})
    max_tokens: int = field(default=600_000, metadata={"bounds": (1, 10**12), 
        "help": "prompt + completion tokens in one night, a call's worst case reserved before it"})
    max_minutes: float = field(default=60.0, metadata={"bounds": (1e-6, 1e7), "help": "wall-clock minutes of one night"})


@dataclass
class TransferConfig:
    """skillos sleep transfer: a skill run inside a real coding-agent CLI, with and without it,
    on reviewed tasks (training/textopt/sleep/transfer.py). Every cap is checked before a call is made."""
    agent: str = field(default="claude", metadata={"choices": registry.AGENT_CLIS.names(), 
        "help": "the coding agent: claude (`claude -p`) | codex (`codex exec`); registry.AGENT_CLIS"})
    repeats: int = field(default=1, metadata={"bounds": (1, 1_000), "help": "runs of each task in each arm"})
    max_calls: int = field(default=40, metadata={"bounds": (1, 1_000_000), 
        "help": "agent runs a transfer may make; one that needs more (tasks x 2 arms x repeats) is refused before any"})
    max_minutes: float = field(default=30.0, metadata={"bounds": (1e-6, 1e7), 
        "help": "wall-clock minutes; past them the remaining runs are not made and count as unmeasured"})
    max_cost_usd: float | None = field(default=None, metadata={"bounds": (1e-6, 1e9), 
        "help": "stop when the agent's reported cost reaches this (Claude Code reports it; Codex does not); None: no cap"})
    timeout_s: float = field(default=300.0, metadata={"bounds": (1e-3, 1e7), "help": "one agent run; a run past it is unmeasured"})


@dataclass
class SleepConfig:
    """skillos sleep: learn one skill from the agent's own Claude Code and Codex sessions. Mined
    tasks are split train / validation / sealed test by content hash; candidates are gated with
    optimize's machinery; a night stages a proposal and never writes the live skill."""
    skill: str | None = field(default=None, metadata={
        "help": "the live skill folder (holding SKILL.md) a night improves"})
    sources: list = field(default_factory=lambda: ["claude", "codex"], metadata={
        "help": "whose session transcripts are mined: claude (Claude Code) and/or codex"})
    claude_dir: str = field(default="~/.claude", metadata={
        "help": "Claude Code's folder; its transcripts are read from CLAUDE_DIR/projects"})
    codex_dir: str = field(default="~/.codex", metadata={
        "help": "Codex's folder, where its session transcripts are read"})
    project: str | None = field(default=None, metadata={
        "help": "only sessions whose working directory contains this; None: all"})
    since: str | None = field(default=None, metadata={"help": "ISO date: only sessions started on or after it"})
    max_sessions: int = field(default=500, metadata={"bounds": (1, 10_000_000), "help": "the most recent sessions after the filters"})
    subagents: bool = field(default=False, metadata={"help": "also harvest Claude Code sub-agent sessions"})
    tasks: str | None = field(default=None, metadata={
        "help": "a reviewed task file (JSONL) replaces mining (privacy-safe runs)"})
    model: BackendConfig = field(default_factory=BackendConfig, metadata={"help": "replays tasks (a model backend)"})
    optimizer: BackendConfig = field(default_factory=BackendConfig, metadata={
        "help": "proposes edits: heuristic or a model"})
    steps: int = field(default=2, metadata={"bounds": (1, 10_000), "help": "candidates proposed per night"})
    max_edits: int = field(default=4, metadata={"bounds": (1, 100_000), 
        "help": "the textual learning rate: lines one step may change, at the first step ..."})
    min_edits: int = field(default=2, metadata={"bounds": (1, 100_000), "help": "... decaying to this at the last"})
    schedule: str = field(default="cosine", metadata={"choices": SCHEDULES, 
        "help": "how the edit budget decays from max_edits to min_edits: cosine | linear | constant"})
    validation_share: float = field(default=0.34, metadata={"bounds": (1e-9, 0.999999), 
        "help": "of mined tasks, by content hash (SkillOpt-Sleep's held-out share)"})
    test_share: float = field(default=0.2, metadata={"bounds": (0.0, 0.999999), 
        "help": "of mined tasks, by content hash; sealed: read once, at the end of the night"})
    gate: OptimizeGateConfig = field(default_factory=OptimizeGateConfig, metadata={
        "help": "when a candidate is accepted (optimize's gate)"})
    no_regress: bool = field(default=False, metadata={
        "help": "also reject a candidate that breaks any validation task"})
    edit_anywhere: bool = field(default=False, metadata={
        "help": "edits may rewrite the whole body, not only the learned block"})
    max_consecutive_errors: int = field(default=5, metadata={"bounds": (1, 10_000), 
        "help": "failed calls in a row that end the night as an outage"})
    dream_factor: int = field(default=0, metadata={"bounds": (0, DREAM_FRAMINGS), 
        "help": "perturbed variants of each mined train task, replayed beside it (SkillOpt's dream_factor): the same "
                "request reworded, the same checks; by rules, or by sleep.optimizer when it is a model (one call per "
                "task, under the night's budget). Only train tasks are dreamed; 0: none"})
    llm_miner: bool = field(default=False, metadata={
        "help": "also ask sleep.optimizer (a model backend) for checks of each request the rules found none for; "
                "a request is kept only with checks the task-file rules accept (a rubric only with a judge), and "
                "every call counts against the night's budget"})
    budget: SleepBudgetConfig = field(default_factory=SleepBudgetConfig, metadata={
        "help": "hard caps per night: calls, tokens, minutes"})
    home: str | None = field(default=None, metadata={
        "help": "where digests, nights, proposals and backups go; None: $SKILLOS_HOME/sleep"})
    transfer: TransferConfig = field(default_factory=TransferConfig, metadata={
        "help": "skillos sleep transfer: the skill inside a real coding-agent CLI, with and without it"})

    def rules(self, where: str) -> None:
        # The sleep settings' own rules (a night reads them validated). What a night needs of the
        # rest of the machine (the live skill, a replay backend, dream's framings) is checked by
        # training/textopt/sleep/night.py's preflight, at the night.
        if self.min_edits > self.max_edits:
            raise ConfigError(f"{where}.min_edits ({self.min_edits}) is above {where}.max_edits ({self.max_edits})")
        if self.llm_miner and not registry.uses_model(self.optimizer.backend):
            raise ConfigError(f"{where}.llm_miner: the LLM miner asks {where}.optimizer, which is heuristic; set "
                              f"{where}.optimizer.backend to one of {', '.join(registry.model_backends())} or turn "
                              "llm_miner off")
        if self.validation_share + self.test_share >= 1:
            raise ConfigError(f"{where}.validation_share and {where}.test_share: shares in (0, 1) that leave train "
                              "tasks")
