"""skillos: a research toolkit for agent skills (SKILL.md files an agent retrieves before a task).

The import is light on purpose: no torch, no alfworld. Heavy libraries load inside the code
that needs them, so `skillos gate check` and `skillos ledger ...` start fast on a laptop.
"""

__version__ = "0.1.0"
