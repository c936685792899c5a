"""The words a trace is written in (the gates' `gate check --trace`, skillos/gates/trace.py): a
`Row` per config key (what it was set to, which consumer receives it, what arrived there, whether
that is the value), and `resolver`, which marks a function as the consumer lookup of the keys its
pattern matches.

A layer below training/, as skillos.checking is, so that a method's package brings the resolvers
of the keys its trainer reads (its `trace` module, named in skillos.registry.METHODS) without
importing the gates. A method's resolvers are asked first for a config whose skillgate.trainer is
one of the method's trainers, an eval config's too (the default trainer's method is asked for every
config that names none), and a method with no weight trainer's for every config (textopt's: the keys
of its own section); a resolver returns None where the key is not its to resolve here (the
gates' generic resolver then is). A resolver gets the gates' tracer `t` (t.cfg, t.args(), t.cached(name, build),
t.trainer, t.entry, t.trainer_class()), the key, its value and the pattern's named groups.
"""

from __future__ import annotations

import enum
import importlib
import re
from dataclasses import asdict, dataclass

from skillos.checking import same
from skillos.evals.curation import steps_shown
from skillos.evals.trajectory import Step, Trajectory

UNSET = object()


@dataclass
class Row:
    key: str
    value: object
    consumer: str
    applied: bool | None  # None: the consumer could not be built here (detail says why)
    arrived: object = None
    detail: str = ""

    def to_dict(self) -> dict:
        data = asdict(self)
        data["value"], data["arrived"] = plain(self.value), plain(self.arrived)
        return data

    def line(self) -> str:
        mark = {True: "applied", False: "NOT APPLIED", None: "unverified"}[self.applied]
        text = f"{mark:<11} {self.key} = {show(self.value)} -> {self.consumer}: {show(self.arrived)}"
        return text + (f" · {self.detail}" if self.detail else "")


def plain(value):
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (set, frozenset, tuple)):
        return sorted(map(str, value)) if isinstance(value, (set, frozenset)) else list(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return str(value)


def show(value) -> str:
    value = plain(value)
    return "unset" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def equal(a, b) -> bool:
    a, b = plain(a), plain(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return sorted(map(str, a)) == sorted(map(str, b))
    if isinstance(a, str) and isinstance(b, str):
        return a == b  # exact: `same` matches model names by their last part only
    return same(a, b)


def row(key, value, consumer, arrived, detail="", applied=None) -> Row:
    """A key's row: applied when what arrived equals the value (or as `applied` says)."""
    if value is None and applied is None:  # unset: the consumer's own default applies, shown as arrived
        return Row(key, value, consumer, True, arrived, "unset: the consumer's default" + (f"; {detail}" if detail
                                                                                          else ""))
    if applied is None:
        applied = equal(value, arrived)
    return Row(key, value, consumer, applied, arrived, detail)


def not_used(key, value, consumer_why: str) -> Row:
    """No consumer: applied only when nothing was set (an unset key has nothing to apply)."""
    if value is None:
        return Row(key, value, "none", True, None, f"unset; {consumer_why}")
    return Row(key, value, "none", False, None, f"{consumer_why}; the value reaches no code")


def resolver(pattern: str):
    """Mark a function as the consumer lookup of the config keys `pattern` matches (its named
    groups are passed as keywords): fn(t, key, value, **groups) -> Row, or None (a method's: not
    its key to resolve here)."""
    def wrap(fn):
        fn.trace_pattern = re.compile(pattern)
        return fn
    return wrap


def resolvers(module: str) -> list:
    """The resolvers `module` defines, in its order (the first whose pattern matches a key is asked)."""
    found = importlib.import_module(module)
    return [fn for fn in vars(found).values()
            if getattr(fn, "trace_pattern", None) is not None and fn.__module__ == found.__name__]


def probe_trajectory() -> Trajectory:
    """A lost game of 50 numbered steps: how many of them a curator's input shows is what arrived
    of curator.history_length (steps_row)."""
    return Trajectory("probe", "probe task", "", steps=[Step(f"probe-action-{i}", f"observation {i}")
                                                        for i in range(50)], won=False)


def steps_row(key, value, consumer: str, text: str) -> Row:
    """curator.history_length's row from a curator input rendered from probe_trajectory()."""
    shown = len(re.findall(r"^> probe-action-\d+$", text, re.M))
    return row(key, value, consumer, shown, "of 50 steps in the game", applied=shown == min(50, steps_shown(value)))
