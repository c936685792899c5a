"""A config from a file, a mapping or a Config with `--set` overrides, checked as a file would be."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillos.errors import ConfigError
from skillos.config.fields import build
from skillos.config.matrix import expand
from skillos.config.rules import check, check_inputs, protect
from skillos.config.schema import Config
from skillos.config.sets import apply_sets, check_structure
from skillos import safety
from skillos.errors import SkillosError


def validate(cfg: Config) -> Config:
    """Every rule of a built config; with `matrix:` or `experiment.seeds`, every run it expands to is
    a valid config too (or the load fails naming the run)."""
    check(cfg)
    if cfg.matrix or cfg.experiment.seeds is not None:
        expand(cfg)
    return cfg


def from_dict(data: Any, where: str = "") -> Config:
    return protect(validate(build(Config, data, where)))


def revalidate(cfg: Config) -> Config:
    """A Config handed to the library (perhaps changed after it was loaded) checked as if a file
    had said it: structure bounds, types, bounds, choices and named inputs. Returns a fresh Config
    built from it; the caller's object is not trusted, nor changed."""
    check_structure(cfg, "config")
    source, declared, family = cfg.source, cfg.declared, cfg.family
    try:
        new = from_dict(cfg.to_dict())
        new.source, new.declared, new.family = source, declared, family
        check_inputs(new)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}" if source else str(exc)) from None
    return new


def with_sets(cfg: Config, sets) -> Config:
    """A copy of `cfg` with `KEY=VALUE` overrides, validated as if the file had said so."""
    if not sets:
        return cfg
    new = from_dict(apply_sets(cfg.to_dict(), sets))
    new.source, new.declared, new.family = cfg.source, cfg.declared, cfg.family
    return new


def load(path: str | Path, sets=()) -> Config:
    """A config file; `sets` are KEY=VALUE overrides applied before validation (`--set`)."""

    path = Path(path)
    try:  # size capped before parsing; duplicated keys and alias bombs refused
        data = safety.load_yaml(safety.read_text(path, safety.MAX_CONFIG_BYTES, "config file"), str(path))
    except ConfigError:
        raise
    except SkillosError as exc:
        raise ConfigError(str(exc)) from None
    if data is None or data == {}:
        raise ConfigError(f"{path}: the config is empty; name at least the experiment (see "
                          "evals/configs/quickstart.yaml)")
    try:
        data = apply_sets(data, sets)
        cfg = build(Config, data, "")
        cfg.source = path  # named inputs resolve beside the config file
        cfg.declared = frozenset(data)
        protect(validate(cfg))
        check_inputs(cfg)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return cfg
