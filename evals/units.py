"""What the readers of `skillos import` hand back (evals/imported.py, skill_creator.py,
skillsbench.py): each arm's units, a unit's trials as read, what a reader knows of an arm beyond
its name, and the one way a name read from another tool's file becomes text.
"""

from __future__ import annotations

import re

from skillos.errors import SkillosError

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def label(value, what: str, where: str) -> str:
    """An arm name or game id as text: a string or a number, never an object, a list or a boolean
    (whose Python repr would stand in silently), and never a control character (a newline in a name
    prints a line of its own that reads like skillos's)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise SkillosError(f"{where}: the {what} is a JSON {type(value).__name__}, not a string or a number")
    text = str(value)
    if _CONTROL.search(text):
        raise SkillosError(f"{where}: the {what} {text!r} holds a control character (a newline, a tab, an escape)")
    return text


class Trials(dict):
    """One unit's trials as read: trial label -> outcome (True/False, a score, None)."""


class Arms(dict):
    """What the readers return: arm -> {unit: outcome or Trials}, with `meta`: arm -> what a
    reader knows of it beyond its name (a registry's configuration and condition)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.meta: dict = {}
        self.reasons: dict = {}  # arm -> {unit: why it has no outcome}, where the source says (errored)


def unit_outcome(value) -> tuple:
    """(success, trials) of one imported unit, as a row keeps them: a single binary outcome is
    (True/False/None, None); a score or several trials is (None, [score per trial]), in the
    trials' label order (a test pairs units, never trials)."""
    if isinstance(value, Trials):
        scores = [value[k] for k in sorted(value, key=_trial_order)]
        return None, [None if v is None else float(v) for v in scores]
    if isinstance(value, float):
        return None, [value]
    return value, None


def _trial_order(text: str):
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)


def trial_label(value, where: str) -> str:
    """A trial's label as text; a whole number written 1 or 1.0 is one label ("1"), so a trial
    listed twice under two spellings is caught as listed twice."""
    text = label(value, "trial", where)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return text
