"""One experiment-config schema (YAML) for every command, validated with clear errors.

Unknown keys are errors with a did-you-mean; a wrong type or value names the key and what is
allowed. Sections that later issues fill (`training`, `judge`, `compute`, `divergences`) are
accepted as mappings and kept as written.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from skillos.errors import ConfigError, yaml_error_line

ENVS = ("household",)
SPLITS = ("train", "valid_seen", "valid_unseen")
BACKENDS = ("heuristic",)  # model backends (openai, anthropic, vllm, hf) arrive with the eval issue
RETRIEVAL_MODES = ("bm25", "shuffled")
ARMS = ("no_memory", "closed_loop", "static_repo", "shuffled")


@dataclass
class ExperimentConfig:
    name: str = "experiment"
    hypothesis: str = ""


@dataclass
class EnvConfig:
    name: str = "household"
    split: str = "valid_unseen"  # the held-out split the arms are measured on
    n_games: int = 60
    train_split: str = "train"  # games the closed_loop curator learns from before held-out
    n_train_games: int = 60
    max_steps: int = 30
    seed: int = 0
    data: str = "generated"  # generated | official ($ALFWORLD_DATA)


@dataclass
class BackendConfig:
    backend: str = "heuristic"


@dataclass
class RetrievalConfig:
    top_k: int = 5
    mode: str = "bm25"


@dataclass
class EvalConfig:
    arms: list = field(default_factory=lambda: ["no_memory", "closed_loop"])
    control: str = "no_memory"
    alpha: float = 0.05
    power: float = 0.8
    bootstrap: int = 10_000
    static_repo: str | None = None  # skill folder for the static_repo arm
    output_dir: str = "runs"
    workers: int = 0  # arms played in parallel processes; 0: one per CPU core


@dataclass
class Config:
    experiment: ExperimentConfig = field(default_factory=ExperimentConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    executor: BackendConfig = field(default_factory=BackendConfig)
    curator: BackendConfig = field(default_factory=BackendConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    training: dict = field(default_factory=dict)
    judge: dict = field(default_factory=dict)
    compute: dict = field(default_factory=dict)
    divergences: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def hash(self) -> str:
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]


def _did_you_mean(key: str, options) -> str:
    close = difflib.get_close_matches(key, list(options), n=1)
    return f" (did you mean {close[0]!r}?)" if close else f" (allowed: {', '.join(options)})"


def _build(cls, data: Any, where: str):
    if data is None:
        return cls()
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values = {}
    for key, value in data.items():
        if key not in fields:
            raise ConfigError(f"{where}.{key}: unknown key{_did_you_mean(str(key), fields)}")
        f = fields[key]
        sub = f.default_factory if f.default_factory is not dataclasses.MISSING else None
        if dataclasses.is_dataclass(sub):
            values[key] = _build(sub, value, f"{where}.{key}" if where else key)
        else:
            values[key] = _check_type(value, f, f"{where}.{key}" if where else key)
    return cls(**values)


def _check_type(value, f, where):
    default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
    if default is None:  # optional path-like settings
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string or null, got {value!r}")
        return value
    expected = type(default)
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, bool) and expected is not bool or not isinstance(value, expected):
        raise ConfigError(f"{where}: expected {expected.__name__}, got {value!r}")
    return value


def _choice(value, allowed, where):
    if value not in allowed:
        raise ConfigError(f"{where}: {value!r} is not one of {', '.join(allowed)}")


def validate(cfg: Config) -> Config:
    _choice(cfg.env.name, ENVS, "env.name")
    _choice(cfg.env.split, SPLITS, "env.split")
    _choice(cfg.env.train_split, SPLITS, "env.train_split")
    _choice(cfg.env.data, ("generated", "official"), "env.data")
    _choice(cfg.executor.backend, BACKENDS, "executor.backend")
    _choice(cfg.curator.backend, BACKENDS, "curator.backend")
    _choice(cfg.retrieval.mode, RETRIEVAL_MODES, "retrieval.mode")
    for key in ("n_games", "max_steps"):
        if getattr(cfg.env, key) < 1:
            raise ConfigError(f"env.{key}: must be at least 1, got {getattr(cfg.env, key)}")
    if cfg.env.n_train_games < 0:
        raise ConfigError(f"env.n_train_games: must be 0 or more, got {cfg.env.n_train_games}")
    if cfg.env.split == cfg.env.train_split:
        raise ConfigError(f"env.split and env.train_split are both {cfg.env.split!r}: "
                          "held-out games must not be training games")
    if cfg.retrieval.top_k < 0:
        raise ConfigError(f"retrieval.top_k: must be 0 or more, got {cfg.retrieval.top_k}")
    if not cfg.eval.arms:
        raise ConfigError("eval.arms: name at least one arm")
    for i, arm in enumerate(cfg.eval.arms):
        if arm not in ARMS:
            raise ConfigError(f"eval.arms[{i}]: unknown arm {arm!r}{_did_you_mean(str(arm), ARMS)}")
    if len(set(cfg.eval.arms)) != len(cfg.eval.arms):
        raise ConfigError("eval.arms: an arm is listed twice")
    if cfg.eval.control not in cfg.eval.arms:
        raise ConfigError(f"eval.control: {cfg.eval.control!r} is not among eval.arms "
                          "(the control must be measured in the same run)")
    if "static_repo" in cfg.eval.arms and not cfg.eval.static_repo:
        raise ConfigError("eval.static_repo: the static_repo arm needs a skill folder path")
    if not 0 < cfg.eval.alpha < 1 or not 0 < cfg.eval.power < 1:
        raise ConfigError("eval.alpha and eval.power must be between 0 and 1")
    if cfg.eval.workers < 0:
        raise ConfigError(f"eval.workers: 0 (one per core) or more, got {cfg.eval.workers}")
    if cfg.eval.bootstrap < 100:
        raise ConfigError(f"eval.bootstrap: at least 100 resamples, got {cfg.eval.bootstrap}")
    return cfg


def from_dict(data: Any, where: str = "") -> Config:
    return validate(_build(Config, data, where))


def load(path: str | Path) -> Config:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read ({exc})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}:{yaml_error_line(exc)} invalid YAML") from None
    try:
        return from_dict(data or {})
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
