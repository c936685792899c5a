"""Moved to skillos.evals.backends.tiny_model (evals must not import training); this path
re-exports it so existing imports keep working."""

from skillos.evals.backends.tiny_model import *  # noqa: F401,F403
from skillos.evals.backends.tiny_model import TINY_NAME, build, resolve  # noqa: F401
