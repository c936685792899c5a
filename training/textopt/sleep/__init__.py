"""skillos sleep: learn a skill from the agent's own Claude Code and Codex sessions.

harvest (read transcripts, redacted) → mine (checkable tasks, hash splits) → replay (a model
backend, judged by each task's checks, under hard caps) → night (gate, sealed test, ledger) →
stage (a proposal a person adopts). `run_night(cfg)` is the one entry point that spends compute;
`plan_night(cfg)` is its dry run.
"""

from skillos.training.textopt.sleep.night import plan_night, run_night

__all__ = ["plan_night", "run_night"]
