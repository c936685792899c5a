"""skillos: a research toolkit for agent skills (SKILL.md files an agent retrieves before a task).

The import is light on purpose: no torch, no alfworld. Heavy libraries load inside the code
that needs them, so `skillos gate check` and `skillos ledger ...` start fast on a laptop.

The public API (skillos.api), loaded on first use:
    skillos.evaluate, skillos.sweep, skillos.optimize, skillos.train, skillos.compare,
    skillos.check, skillos.sleep, skillos.evaluate_slate, skillos.canary, skillos.load,
    skillos.GateRefused
and the read-only viewer as its own package: skillos.view.serve, skillos.view.export_site.
"""

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("skillos")  # one home: pyproject.toml's version
except _metadata.PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

API = ("evaluate", "sweep", "optimize", "train", "compare", "check", "sleep", "evaluate_slate", "canary", "load",
       "GateRefused")
__all__ = list(API)


def __getattr__(name):
    # PEP 562: `skillos.evaluate` without importing the gates and the config schema at
    # `import skillos` (every submodule imports the package first).
    if name in API:
        from skillos import api

        return getattr(api, name)
    raise AttributeError(f"module 'skillos' has no attribute {name!r}")
