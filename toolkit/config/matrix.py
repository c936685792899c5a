"""`matrix:` x `experiment.seeds`: the runs of one experiment, each a checked config of its own."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
from dataclasses import dataclass

from skillos.errors import ConfigError
from skillos.config.fields import build
from skillos.config.rules import check, protect
from skillos.config.schema import Config
from skillos.config.sets import apply_sets


MAX_MATRIX_RUNS = 512  # runs of one matrix experiment (axes x seeds): a typo of a few lines is not minutes of work


@dataclass
class Run:
    """One run of a matrix: its label (a folder name), the axis values and seed it sets, its config."""

    label: str
    values: dict
    seed: int | None
    cfg: "Config"


def expand(cfg: Config) -> list[Run]:
    """`matrix:` x `experiment.seeds` -> the runs of the one experiment, in order (axes in file
    order, seeds last). A config with neither is one run: itself. Each run's config has no
    matrix and no seeds, and carries `family` (the parent's hash, its label, its plan hash)."""
    axes = matrix_axes(cfg)
    seeds = cfg.experiment.seeds
    if seeds is not None:
        if not seeds or not all(isinstance(x, int) and not isinstance(x, bool) for x in seeds):
            raise ConfigError(f"experiment.seeds: a list of integer seeds, got {seeds!r}")
        if len(set(seeds)) != len(seeds):
            raise ConfigError(f"experiment.seeds: a seed is repeated in {seeds}")
    sizes = [len(values) for _, _, values in axes] + ([len(seeds)] if seeds is not None else [])
    if math.prod(sizes) > MAX_MATRIX_RUNS:  # counted before any run's config is built
        raise ConfigError(f"matrix: {math.prod(sizes):,} runs ({' x '.join(map(str, sizes))}"
                          f"{' seeds' if seeds is not None else ''}); one experiment holds at most "
                          f"{MAX_MATRIX_RUNS}: split it into experiments, or drop values")
    if not axes and seeds is None:
        return [Run("run", {}, None, cfg)]
    base = dataclasses.replace(cfg, matrix={}, experiment=dataclasses.replace(cfg.experiment, seeds=None))
    parent, plan, runs = cfg.hash(), cfg.plan_hash(), []
    for combo in itertools.product(*[[(name, key, v) for v in values] for name, key, values in axes]):
        for seed in (seeds if seeds is not None else [None]):
            sets = [f"{key}={json.dumps(value)}" for _, key, value in combo]
            if seed is not None:
                sets.append(f"env.seed={seed}")
                if cfg.training.is_set():
                    sets.append(f"training.seed={seed}")
            label = "_".join([f"{name}-{label_of(value)}" for name, _, value in combo] +
                             ([f"seed-{seed}"] if seed is not None else []))
            try:
                child = protect(check(build(Config, apply_sets(base.to_dict(), sets), "")))
            except ConfigError as exc:
                raise ConfigError(f"matrix run {label}: {exc}") from None
            child.source, child.declared, child.family = cfg.source, cfg.declared, (parent, label, plan)
            runs.append(Run(label, {name: value for name, _, value in combo}, seed, child))
    if len({r.label for r in runs}) != len(runs):
        raise ConfigError("matrix: two runs get the same folder name; give the values distinct names")
    return runs


def matrix_axes(cfg: Config) -> list[tuple]:
    """[(axis, key, values)] of `matrix:`, checked: each axis a plain name with a config key and
    a non-empty list of distinct values."""
    axes = []
    known = cfg.to_dict()
    for name, axis in cfg.matrix.items():
        where = f"matrix.{name}"
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", str(name)):
            raise ConfigError(f"{where}: an axis name is a plain word (letters, digits, _ . -)")
        if not isinstance(axis, dict) or set(axis) != {"key", "values"}:
            raise ConfigError(f"{where}: expected {{key: CONFIG.KEY, values: [...]}}, got {axis!r}")
        key, values = axis["key"], axis["values"]
        node = known
        for part in str(key).split("."):
            if not isinstance(node, dict) or part not in node:
                raise ConfigError(f"{where}.key: {key!r} is not a config key")
            node = node[part]
        if key in ("experiment.seeds", "env.seed", "training.seed") or str(key).startswith("matrix"):
            raise ConfigError(f"{where}.key: {key!r}: seeds go in experiment.seeds")
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{where}.values: a non-empty list, got {values!r}")
        if len({json.dumps(v, sort_keys=True) for v in values}) != len(values):
            raise ConfigError(f"{where}.values: a value is repeated in {values}")
        for other, other_key, _ in axes:  # one key set by two axes: the later wins and the labels lie
            if str(key) == other_key or str(key).startswith(other_key + ".") or other_key.startswith(str(key) + "."):
                raise ConfigError(f"{where}.key: {key!r} overlaps matrix.{other}.key {other_key!r}: one axis "
                                  "would override the other's values and the run labels would name values "
                                  "that never ran")
        axes.append((str(name), str(key), values))
    return axes


def label_of(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return re.sub(r"[^A-Za-z0-9.+-]+", "-", text).strip("-")[:40] or "x"
