"""User-facing errors: one line that says what is wrong, where, and how to fix it.

The CLI prints `str(error)` and exits non-zero; it never shows a traceback for these.
"""

from skillos.secrets import redact_text


class SkillosError(Exception):
    """A mistake in the user's input (a config, a skill file, a path). Message is one line."""

    exit_code = 2

    def __init__(self, message: str):
        # one line, and never a key (an endpoint may echo it into an error we pass on)
        super().__init__(redact_text(" ".join(str(message).split())))


class SkillError(SkillosError):
    """A skill file or skill operation is invalid. Exit 1: validation found problems."""

    exit_code = 1


class Refused(SkillosError):
    """A step refused as asked (a person's step without a person at a terminal). Exit 1."""

    exit_code = 1


class ConfigError(SkillosError):
    """An experiment config is unreadable or invalid."""


def yaml_error_line(exc: Exception) -> str:
    """' line N' for a YAML error that knows where it happened, else ''."""
    mark = getattr(exc, "problem_mark", None)
    return f" line {mark.line + 1}" if mark is not None else ""
