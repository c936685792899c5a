"""How a config section's fields are read and checked: a YAML mapping built into its dataclass
with each value's type checked, and the one validator of field-level rules.

A field's rules sit in its metadata next to its help, as TRL keeps help there:
    bounds=(low, high)   a number is finite and inside them (wide enough for the paper's settings,
                         narrow enough that a typo is an error, not a full disk or an overflow)
    choices=(...)        a value (or each item of a list) is one of them; None passes where allowed
`check_fields` walks a whole config and reads them; a section's rules across its own fields live
in its `rules(where)` method, and rules across sections in config/rules.py.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import math
import re
import types
import typing
from typing import Any

from skillos.errors import ConfigError


def did_you_mean(key: str, options, list_allowed: bool = True) -> str:
    """' (did you mean X?)' for the closest option; else the allowed options, or nothing."""
    close = difflib.get_close_matches(key, list(options), n=1)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (allowed: {', '.join(options)})" if list_allowed else ""


def choice(value, allowed, where: str) -> None:
    if value not in allowed:
        raise ConfigError(f"{where}: {value!r} is not one of {', '.join(allowed)}")


def lookup(cfg, dotted: str):
    """The value at a dotted key (`training.seed`) of a config or section."""
    for part in dotted.split("."):
        cfg = getattr(cfg, part)
    return cfg


def default_of(f: dataclasses.Field):
    return f.default if f.default is not dataclasses.MISSING else f.default_factory()


@functools.lru_cache(maxsize=None)
def hints(cls) -> dict:
    """A config section's resolved type hints, once per class (resolving them was 95% of a load:
    a 512-run matrix took a minute to check)."""
    return typing.get_type_hints(cls)


def build(cls, data: Any, where: str):
    """A section (`cls`) from its YAML mapping: unknown keys refused with a did-you-mean and the
    help of the key meant, each value type-checked, subsections built in turn."""
    if data is None:
        return cls()
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values = {}
    for key, value in data.items():
        if key not in fields:
            raise ConfigError(f"{f'{where}.' if where else ''}{key}: unknown key{did_you_mean(str(key), fields)}"
                              f"{close_help(cls, str(key))}")
        f = fields[key]
        sub = f.default_factory if f.default_factory is not dataclasses.MISSING else None
        path = f"{where}.{key}" if where else key
        shorthand = f.metadata.get("shorthand")  # `control: no_memory` is short for `control: {arm: no_memory}`
        if shorthand and isinstance(value, str):
            value = {shorthand: value}
        if dataclasses.is_dataclass(sub):
            values[key] = build(sub, value, path)
        else:
            values[key] = check_type(value, hints(cls)[key], path)
    return cls(**values)


def close_help(cls, key: str) -> str:
    """For an unknown key: the help and default of the key it is closest to (what was meant)."""
    close = difflib.get_close_matches(key, [f.name for f in dataclasses.fields(cls)], n=1)
    if not close:
        return ""
    f = next(f for f in dataclasses.fields(cls) if f.name == close[0])
    if dataclasses.is_dataclass(f.default_factory):
        return f"; {close[0]}: {f.metadata.get('help')}"
    return f"; {close[0]}: {f.metadata.get('help')} (default {json.dumps(default_of(f))})"


EXPONENT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def check_type(value, hint, where):
    """Check `value` against a field's type hint (a type, or a union with None)."""
    allowed = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) \
        else (hint,)
    if value is None:
        if type(None) in allowed:
            return None
        raise ConfigError(f"{where}: must be set, got null")
    for kind in allowed:
        kind = typing.get_origin(kind) or kind
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if kind is float and isinstance(value, str) and EXPONENT.fullmatch(value.strip()):
            return float(value)  # YAML 1.1 reads `1e-6` (no dot) as a string
        if isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool):
            return value
    names = " or ".join("null" if k is type(None) else (typing.get_origin(k) or k).__name__
                        for k in allowed)
    raise ConfigError(f"{where}: expected {names}, got {value!r}")


def check_bound(value, low, high, where: str) -> None:
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{where}: must be a finite number, got {value}")
    if not low <= value <= high:
        raise ConfigError(f"{where}: must be between {low:g} and {high:g}, got {value:g}"
                          if isinstance(value, float) or isinstance(low, float)
                          else f"{where}: must be between {low} and {high}, got {value}")


def check_fields(section, where: str = "") -> None:
    """The one validator of field metadata, over a section and every section inside it: each
    field's bounds and choices, then the section's own `rules(where)` across its fields."""
    for f in dataclasses.fields(section):
        value, key = getattr(section, f.name), f"{where}.{f.name}" if where else f.name
        if dataclasses.is_dataclass(value):
            check_fields(value, key)
            continue
        if "bounds" in f.metadata:
            check_bound(value, *f.metadata["bounds"], key)
        allowed = f.metadata.get("choices")
        if allowed is not None and value is not None:
            for item in (value if isinstance(value, list) else [value]):
                choice(item, allowed.names() if hasattr(allowed, "names") else tuple(allowed), key)
    rules = getattr(section, "rules", None)
    if rules is not None:
        rules(where)
