"""`--set KEY=VALUE` overrides: parsed with a config file's bounds and written into a config's
mapping before it is built."""

from __future__ import annotations

import dataclasses
from typing import Any

from skillos.errors import ConfigError
from skillos.config.schema import SECTIONS
from skillos import safety
from skillos.errors import SkillosError


def parse_set(item: str) -> tuple[list[str], Any]:
    """`--set KEY=VALUE`: a dotted key and a YAML value (`eval.alpha=0.01`, `eval.arms=[a, b]`),
    parsed with the bounds of a config file: its size, aliases, expanded nodes, nesting and
    duplicated keys (skillos.safety.load_yaml)."""

    item = str(item)
    key, sep, raw = item.partition("=")
    shown = item if len(item) <= 80 else item[:77] + "..."
    if not sep or not key.strip() or any(not part for part in key.strip().split(".")):
        raise ConfigError(f"--set {shown!r}: expected KEY=VALUE, e.g. env.n_games=6")
    if len(item.encode("utf-8", errors="replace")) > safety.MAX_CONFIG_BYTES:
        raise ConfigError(f"--set {key.strip()[:60]}: the value is over {safety.MAX_CONFIG_BYTES} bytes "
                          "(the size cap of a config file)")
    try:
        value = safety.load_yaml(raw, f"--set {key.strip()[:60]}") if raw.strip() else None
    except SkillosError as exc:
        raise ConfigError(str(exc)) from None
    keys = key.strip().split(".")
    if value is None and len(keys) == 1 and keys[0] in SECTIONS:
        raise ConfigError(f"--set {shown!r}: {keys[0]} is a section; null would replace all of it with the "
                          f"defaults. Set its keys instead ({keys[0]}.KEY=VALUE)")
    check_structure(value, f"--set {key.strip()[:60]}")
    return keys, value


def check_structure(value, where: str) -> None:
    """The bounds a YAML file gets, for a value built in Python (a `--set`, a Config mutated in
    a notebook): at most MAX_YAML_ALIASES shared containers, MAX_YAML_NODES nodes once shared
    ones are expanded, MAX_JSON_DEPTH levels, MAX_CONFIG_BYTES of text, and no cycle."""
    sizes: dict = {}
    state = {"aliases": 0, "text": 0}

    def walk(node, depth: int, path: tuple) -> int:
        if depth > safety.MAX_JSON_DEPTH:
            raise ConfigError(f"{where}: nested more than {safety.MAX_JSON_DEPTH} levels")
        if isinstance(node, str):
            state["text"] += len(node)
            if state["text"] > safety.MAX_CONFIG_BYTES:
                raise ConfigError(f"{where}: more than {safety.MAX_CONFIG_BYTES} characters of text (the size "
                                  "cap of a config file)")
            return 1
        if dataclasses.is_dataclass(node) and not isinstance(node, type):
            children = [getattr(node, f.name) for f in dataclasses.fields(node)]
        elif isinstance(node, dict):
            children = [c for kv in node.items() for c in kv]
        elif isinstance(node, (list, tuple, set, frozenset)):
            children = list(node)
        else:
            return 1
        if id(node) in path:
            raise ConfigError(f"{where}: refers to itself (a cycle); a config is a tree")
        if id(node) in sizes:
            state["aliases"] += 1
            if state["aliases"] > safety.MAX_YAML_ALIASES:
                raise ConfigError(f"{where}: more than {safety.MAX_YAML_ALIASES} shared values (aliases); refusing "
                                  "to expand them")
            return sizes[id(node)]
        size = 1 + sum(walk(c, depth + 1, path + (id(node),)) for c in children)
        if size > safety.MAX_YAML_NODES:
            raise ConfigError(f"{where}: expands to more than {safety.MAX_YAML_NODES} nodes; refusing")
        sizes[id(node)] = size
        return size

    walk(value, 0, ())


def apply_sets(data: dict, sets) -> dict:
    """`data` (a config's mapping) with each KEY=VALUE of `sets` written into it."""
    for item in sets:
        keys, value = parse_set(item)
        node = data
        for i, part in enumerate(keys[:-1]):
            child = node.get(part) if isinstance(node, dict) else None
            if child is None or isinstance(child, str):  # `control: no_memory` -> {arm: ...}
                child = {"arm": child} if isinstance(child, str) else {}
                node[part] = child
            if not isinstance(child, dict):
                raise ConfigError(f"--set {item!r}: {'.'.join(keys[:i + 1])} is not a section")
            node = child
        node[keys[-1]] = value
    return data
