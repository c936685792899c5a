"""One experiment-config schema (YAML) for every command, validated with clear errors.

Unknown keys are errors with a did-you-mean; a wrong type or value names the key and what is
allowed. A key left at None is *not set*: the launch gates (skillos.gates) tell a setting the
config chose from a library default it would silently inherit. Training keys use TRL's
GRPOConfig names where one exists, so configs stay portable.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from skillos.errors import ConfigError, yaml_error_line

ENVS = ("household", "reasoning")  # skillos.evals.envs.registry
SPLITS = ("train", "valid_seen", "valid_unseen")
BACKENDS = ("heuristic", "openai", "anthropic", "vllm", "hf")  # vllm: GPU only
COMPUTE_BACKENDS = ("local", "accelerate", "modal")
CURATOR_TOOLS = ("paper", "curate_and_advance")
RETRIEVAL_MODES = ("bm25", "shuffled")
ARMS = ("no_memory", "closed_loop", "static_repo", "shuffled")


@dataclass
class ExperimentConfig:
    name: str = "experiment"
    hypothesis: str = ""
    expected_effect: float | None = None  # the improvement the hypothesis claims (0.10 = 10 pts)
    expected_discordance: float | None = None  # share of discordant pairs, from a pilot (MDE plan)
    fixes_failure: int | None = None  # a fix run: the ledger failure it addresses (gate 6)
    fix_metric: str | None = None  # ... the metric it should move
    before_run: int | None = None  # ... and the ledger run measured before the fix


@dataclass
class ReasoningEnvConfig:
    """env.name: reasoning (skillos.evals.envs.reasoning). Which problem set each split reads:
    `generated` (offline families, split by hash), or a hub dataset read from local files under
    data_dir (aime24, aime25, gpqa_diamond: held-out; deepmath: train). Nothing downloads."""
    datasets: dict = field(default_factory=lambda: {
        "train": "generated", "valid_seen": "generated", "valid_unseen": "generated"})
    data_dir: str = "data/reasoning"  # relative to the config file: DATA_DIR/<hub repo id>/...
    families: list | None = None  # generated problem families; None: every family
    choice_seed: int = 0  # GPQA options are shuffled by this recorded seed
    min_group_size: int | None = None  # curator training: |G| drawn from [this, training.group_size]

    def __post_init__(self):
        from skillos.evals.envs.reasoning.datasets import check_settings

        check_settings(self)


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
    reasoning: ReasoningEnvConfig = field(default_factory=ReasoningEnvConfig)


@dataclass
class BackendConfig:
    backend: str = "heuristic"
    model: str | None = None
    base_url: str | None = None  # an OpenAI-compatible endpoint (vllm serve, OpenRouter, ...)
    api_key_env: str | None = None  # the environment variable holding the key (never the key)
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    reasoning_effort: str | None = None  # none | low | medium | high
    max_tokens: int | None = None
    history_length: int | None = None  # action/observation pairs shown to an LLM executor
    timeout_s: float = 120.0  # per request; the SDK retries 429 / 5xx / timeouts
    max_retries: int = 2


@dataclass
class CuratorConfig(BackendConfig):
    # The tool surface: the paper's three tools, or curate_and_advance(operations), the one tool
    # skillos train publishes. A trained curator must be evaluated on the surface it learned.
    tools: str = "paper"  # paper | curate_and_advance


@dataclass
class JudgeConfig(BackendConfig):
    backend: str | None = None  # no judge unless one is named


@dataclass
class RewardConfig:  # r = r_task + lambda_fc*r_fc + lambda_cnt*r_cnt + lambda_comp*r_comp
    lambda_fc: float = 1.0
    lambda_cnt: float = 0.1
    lambda_comp: float = 0.05


@dataclass
class TrainingConfig:
    """GRPO settings, TRL's names. None = not set; a training config must set them (gate 1)."""
    model: str | None = None
    output_dir: str | None = None
    learning_rate: float | None = None
    per_device_train_batch_size: int | None = None
    gradient_accumulation_steps: int | None = None
    beta: float | None = None
    num_generations: int | None = None
    generation_batch_size: int | None = None
    temperature: float | None = None
    max_steps: int | None = None
    group_size: int | None = None  # tasks per curator rollout, |G|
    max_completion_length: int | None = None  # TRL caps the whole multi-turn rollout with it
    max_prompt_length: int | None = None
    save_steps: int | None = None
    save_total_limit: int | None = None  # None keeps every checkpoint
    loss_type: str | None = None
    lr_scheduler_type: str | None = None
    seed: int | None = None
    gradient_checkpointing: bool | None = None
    bf16: bool | None = None
    use_vllm: bool | None = None  # generation through vLLM (GPU): colocate shares the training GPUs
    vllm_mode: str | None = None  # colocate | server
    vllm_gpu_memory_utilization: float | None = None
    vllm_tensor_parallel_size: int | None = None
    resume_from_checkpoint: str | None = None
    checkpoint_gb: float | None = None  # size of one checkpoint, for the free-disk check
    lora: dict | None = None  # peft LoraConfig fields; None: full fine-tuning

    def is_set(self) -> bool:
        return any(v is not None for v in dataclasses.asdict(self).values())


@dataclass
class ComputeConfig:
    backend: str = "local"  # local | accelerate | modal
    num_processes: int = 1
    deepspeed_config: str | None = None  # path, relative to the config file
    gpu: str | None = None  # e.g. "H100:8", for Modal and cost accounting
    step_minutes: float | None = None  # measured minutes per training step, for save_steps
    max_checkpoint_gap_minutes: float = 60.0  # the most work a crash may lose
    watchdog: bool = True  # gate 7: the launch runs under the watchdog
    stall_minutes: float = 30.0


@dataclass
class RetrievalConfig:
    top_k: int = 5
    mode: str = "bm25"


@dataclass
class ControlConfig:
    arm: str = "no_memory"
    max_age_days: float = 7.0  # a control older than this is stale (gate 4)


@dataclass
class EvalConfig:
    arms: list = field(default_factory=lambda: ["no_memory", "closed_loop"])
    control: ControlConfig = field(default_factory=ControlConfig)  # or just the arm's name
    max_error_rate: float = 0.02  # unmeasured share above which an arm aborts (gate 2)
    alpha: float = 0.05
    power: float = 0.8
    bootstrap: int = 10_000
    static_repo: str | None = None  # skill folder for the static_repo arm
    static_repos: dict = field(default_factory=dict)  # name -> folder, for arms "repo:NAME" (sweeps)
    curators: dict = field(default_factory=dict)  # name -> checkpoint, for arms "curator:NAME" (sweeps)
    output_dir: str = "runs"
    workers: int = 0  # arms played in parallel processes; 0: one per CPU core
    concurrency: int = 1  # games in flight per arm (model backends: 16-64; heuristic: 1)
    wave_size: int = 1  # learning arms: games played on one repo snapshot before curating


@dataclass
class OptimizeGateConfig:
    mode: str = "paired"  # paired: mean paired difference > k·SE; strict: SkillOpt's > (for comparison)
    k: float = 2.0
    max_unmeasured: float = 0.1  # share of validation tasks unmeasured above which a verdict is indecisive


@dataclass
class OptimizeConfig:
    """skillos optimize (text-space, SkillOpt-style). Train minibatches come from env.train_split,
    candidates are gated on the validation split, and env.split is the sealed test split."""
    optimizer: BackendConfig = field(default_factory=BackendConfig)  # heuristic, or a model backend
    seed_skills: str | None = None  # the starting skill folder (relative to the config); None: empty
    epochs: int = 2
    minibatch_size: int = 6
    max_edits: int = 4  # the textual learning rate: edits one step may make, at the first step ...
    min_edits: int = 2  # ... decaying to this at the last
    schedule: str = "cosine"  # cosine | linear | constant
    validation_split: str = "valid_seen"
    n_validation: int = 30
    gate: OptimizeGateConfig = field(default_factory=OptimizeGateConfig)


@dataclass
class Config:
    experiment: ExperimentConfig = field(default_factory=ExperimentConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    executor: BackendConfig = field(default_factory=BackendConfig)
    curator: CuratorConfig = field(default_factory=CuratorConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)
    compute: ComputeConfig = field(default_factory=ComputeConfig)
    optimize: OptimizeConfig = field(default_factory=OptimizeConfig)
    reference: str | None = None  # hyperparameter table to diff against, e.g. skillos-paper/alfworld
    divergences: dict = field(default_factory=dict)  # key -> {value, reason}: sanctioned departures

    source = None  # the file it was loaded from (not a field: not hashed); relative paths resolve here

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def hash(self) -> str:
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]


def did_you_mean(key: str, options, list_allowed: bool = True) -> str:
    """' (did you mean X?)' for the closest option; else the allowed options, or nothing."""
    close = difflib.get_close_matches(key, list(options), n=1)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (allowed: {', '.join(options)})" if list_allowed else ""


def _build(cls, data: Any, where: str):
    if data is None:
        return cls()
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values = {}
    for key, value in data.items():
        if key not in fields:
            raise ConfigError(f"{where}.{key}: unknown key{did_you_mean(str(key), fields)}")
        f = fields[key]
        sub = f.default_factory if f.default_factory is not dataclasses.MISSING else None
        path = f"{where}.{key}" if where else key
        if sub is ControlConfig and isinstance(value, str):
            value = {"arm": value}  # `control: no_memory` is short for `control: {arm: no_memory}`
        if dataclasses.is_dataclass(sub):
            values[key] = _build(sub, value, path)
        else:
            values[key] = _check_type(value, typing.get_type_hints(cls)[key], path)
    return cls(**values)


def _check_type(value, hint, where):
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
        if isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool):
            return value
    names = " or ".join("null" if k is type(None) else (typing.get_origin(k) or k).__name__
                        for k in allowed)
    raise ConfigError(f"{where}: expected {names}, got {value!r}")


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
    _choice(cfg.curator.tools, CURATOR_TOOLS, "curator.tools")
    _choice(cfg.optimize.optimizer.backend, BACKENDS, "optimize.optimizer.backend")
    _choice(cfg.optimize.gate.mode, ("paired", "strict"), "optimize.gate.mode")
    _choice(cfg.optimize.schedule, ("cosine", "linear", "constant"), "optimize.schedule")
    _choice(cfg.optimize.validation_split, SPLITS, "optimize.validation_split")
    o = cfg.optimize
    for key in ("epochs", "minibatch_size", "max_edits", "min_edits", "n_validation"):
        if getattr(o, key) < 1:
            raise ConfigError(f"optimize.{key}: at least 1, got {getattr(o, key)}")
    if o.min_edits > o.max_edits:
        raise ConfigError(f"optimize.min_edits ({o.min_edits}) is above optimize.max_edits ({o.max_edits})")
    _choice(cfg.retrieval.mode, RETRIEVAL_MODES, "retrieval.mode")
    _choice(cfg.compute.backend, COMPUTE_BACKENDS, "compute.backend")
    if cfg.judge.backend is not None:
        _choice(cfg.judge.backend, BACKENDS, "judge.backend")
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
        if str(arm).startswith("repo:"):
            if arm[5:] not in cfg.eval.static_repos:
                raise ConfigError(f"eval.arms[{i}]: {arm!r} names no folder in eval.static_repos")
            continue
        if str(arm).startswith("curator:"):
            if arm[8:] not in cfg.eval.curators:
                raise ConfigError(f"eval.arms[{i}]: {arm!r} names no checkpoint in eval.curators")
            continue
        if arm not in ARMS:
            raise ConfigError(f"eval.arms[{i}]: unknown arm {arm!r}{did_you_mean(str(arm), ARMS)}")
    if len(set(cfg.eval.arms)) != len(cfg.eval.arms):
        raise ConfigError("eval.arms: an arm is listed twice")
    if cfg.eval.control.arm not in cfg.eval.arms:
        raise ConfigError(f"eval.control: {cfg.eval.control.arm!r} is not among eval.arms "
                          "(the control must be measured in the same run)")
    if not 0 <= cfg.eval.max_error_rate < 1:
        raise ConfigError(f"eval.max_error_rate: a share in [0, 1), got {cfg.eval.max_error_rate}")
    if cfg.compute.num_processes < 1:
        raise ConfigError(f"compute.num_processes: at least 1, got {cfg.compute.num_processes}")
    for key, entry in cfg.divergences.items():
        if not isinstance(entry, dict) or set(entry) - {"value", "reason"} or "value" not in entry:
            raise ConfigError(f"divergences.{key}: expected a mapping with 'value' and 'reason'")
        if not str(entry.get("reason") or "").strip():
            raise ConfigError(f"divergences.{key}: a declared departure needs a reason")
    if "static_repo" in cfg.eval.arms and not cfg.eval.static_repo:
        raise ConfigError("eval.static_repo: the static_repo arm needs a skill folder path")
    if not 0 < cfg.eval.alpha < 1 or not 0 < cfg.eval.power < 1:
        raise ConfigError("eval.alpha and eval.power must be between 0 and 1")
    for key in ("concurrency", "wave_size"):
        if getattr(cfg.eval, key) < 1:
            raise ConfigError(f"eval.{key}: at least 1, got {getattr(cfg.eval, key)}")
    if cfg.eval.workers < 0:
        raise ConfigError(f"eval.workers: 0 (one per core) or more, got {cfg.eval.workers}")
    if cfg.eval.bootstrap < 100:
        raise ConfigError(f"eval.bootstrap: at least 100 resamples, got {cfg.eval.bootstrap}")
    return cfg


def relative_to_config(cfg: Config, path: str | Path) -> Path:
    """A path a config names: relative paths resolve beside the config file it was loaded from."""
    p = Path(path)
    return Path(cfg.source).parent / p if not p.is_absolute() and cfg.source is not None else p


def static_repo_path(cfg: Config, arm: str) -> str | None:
    """The fixed skill folder an arm plays with (static_repo, repo:NAME), else None."""
    if arm == "static_repo":
        return cfg.eval.static_repo
    if arm.startswith("repo:"):
        return cfg.eval.static_repos[arm[5:]]
    return None


def curator_config(cfg: Config, arm: str) -> CuratorConfig:
    """The curator an arm learns with: `curator:NAME` arms swap in their checkpoint as the model
    (on a local backend: hf unless the config says vllm); other learning arms use `curator`."""
    if not arm.startswith("curator:"):
        return cfg.curator
    backend = cfg.curator.backend if cfg.curator.backend in ("hf", "vllm") else "hf"
    return dataclasses.replace(cfg.curator, backend=backend, model=cfg.eval.curators[arm[8:]])


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
        cfg = from_dict(data or {})
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    cfg.source = path
    return cfg
