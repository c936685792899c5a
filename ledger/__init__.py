"""skillos.ledger: the SQLite record of experiments, runs, evals, failures, gate results and
overrides (the durable memory the agent and the gates read)."""

from skillos.ledger.store import Ledger, LedgerError, default_path

__all__ = ["Ledger", "LedgerError", "default_path"]
