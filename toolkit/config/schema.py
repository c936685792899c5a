"""The config's root: its sections, the keys that do not change what a run measures, a config's
identity and hash, and each key's help (`skillos config explain`)."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from dataclasses import dataclass, field

from skillos import registry
from skillos.errors import ConfigError
from skillos.config.backend import BackendConfig, CuratorConfig, ExecutorConfig, JudgeConfig
from skillos.config.canary import CanaryConfig
from skillos.config.compute import ComputeConfig
from skillos.config.env import EnvConfig
from skillos.config.eval import EvalConfig, RetrievalConfig
from skillos.config.experiment import ExperimentConfig
from skillos.config.fields import did_you_mean, hints, lookup
from skillos.config.optimize import OptimizeConfig
from skillos.config.skillgate import SkillGateConfig
from skillos.config.sleep import SleepConfig, TransferConfig
from skillos.config.sweep import SweepConfig
from skillos.config.training import RewardConfig, TrainingConfig


@dataclass
class Config:
    experiment: ExperimentConfig = field(default_factory=ExperimentConfig, metadata={
        "help": "what the experiment is and what it claims"})
    env: EnvConfig = field(default_factory=EnvConfig, metadata={"help": "where the games come from"})
    executor: ExecutorConfig = field(default_factory=ExecutorConfig, metadata={"help": "the agent that plays the games"})
    curator: CuratorConfig = field(default_factory=CuratorConfig, metadata={
        "help": "the agent that writes skills from played games (learning arms)"})
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig, metadata={
        "help": "how skills are picked for a game"})
    eval: EvalConfig = field(default_factory=EvalConfig, metadata={"help": "the arms, the control and the statistics"})
    judge: JudgeConfig = field(default_factory=JudgeConfig, metadata={
        "help": "an optional judge model (curator reward r_cnt)"})
    reward: RewardConfig = field(default_factory=RewardConfig, metadata={"help": "the curator's GRPO reward weights"})
    training: TrainingConfig = field(default_factory=TrainingConfig, metadata={
        "help": "GRPO training (TRL's names); None: not set"})
    compute: ComputeConfig = field(default_factory=ComputeConfig, metadata={"help": "where and how training launches"})
    optimize: OptimizeConfig = field(default_factory=OptimizeConfig, metadata={
        "help": "skillos optimize: text-space skill optimization"})
    sleep: SleepConfig = field(default_factory=SleepConfig, metadata={
        "help": "skillos sleep: learn a skill from your own sessions"})
    skillgate: SkillGateConfig = field(default_factory=SkillGateConfig, metadata={
        "help": "SkillGate: the executor learns which skill of a slate to read"})
    canary: CanaryConfig = field(default_factory=CanaryConfig, metadata={
        "help": "a learning canary's miniature (its supervised warm start)"})
    sweep: SweepConfig = field(default_factory=SweepConfig, metadata={
        "help": "how skillos sweep serves its checkpoint arms (one process each, or adapters of one vLLM server)"})
    reference: str | None = field(default=None, metadata={
        "help": "hyperparameter table to diff against, e.g. skillos-paper/alfworld"})
    divergences: dict = field(default_factory=dict, metadata={
        "help": "key -> {value, reason}: sanctioned departures from the reference"})
    matrix: dict = field(default_factory=dict, metadata={
        "help": "named axes over config keys, AXIS: {key: KEY, values: [V, ...]}, e.g. credit: {key: "
                "skillgate.selector_credit, values: [clean-oracle, no_skill]}: one run per combination (times "
                "experiment.seeds), each a run of this one experiment, corrected together as one family"})

    source = None  # the file it was loaded from (not a field: not hashed); relative paths resolve here
    declared = frozenset()  # the sections its file set (not a field): what it is for
    family = None  # (config hash, run label, plan hash) when expanded from a matrix or seeds (not a field: not hashed)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def hash(self) -> str:
        """The identity that groups a family (`identity`): every key that can change a result."""
        return hashlib.sha256(json.dumps(identity(self.to_dict()), sort_keys=True).encode()).hexdigest()[:16]

    def experiment_hash(self) -> str:
        """The hash that names its experiment in the ledger: the config a matrix or seed run was
        expanded from, else its own."""
        return self.family[0] if self.family else self.hash()

    def plan_hash(self) -> str:
        """What an approved plan covers (gates/approval.py): the config's identity and every key
        that changes what its launch reserves or costs (RESOURCE_KEYS), which the identity leaves
        out; a matrix or seed run, its matrix's. Two plans that reserve different GPUs never share it."""
        if self.family:
            return self.family[2]
        data = identity(self.to_dict())
        data["resources"] = {key: lookup(self, key) for key in RESOURCE_KEYS}
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


# What a launch's paid API calls are costed with (evals/prices.py): how it is paid for, not what
# it measures (out of the identity), but an approved plan covers them (in the plan hash).
PRICED_SECTIONS = ("executor", "curator", "judge", "optimize.optimizer", "sleep.model", "sleep.optimizer",
                   "skillgate.teacher")
COST_KEYS = ("compute.max_cost_usd", "compute.prompt_tokens_per_call", "compute.completion_tokens_per_call",
             *(f"{section}.usd_per_mtok" for section in PRICED_SECTIONS))

# Keys that say how or where a run executes, not what it measures: two configs that differ only
# here are the same experiment (the same family, the same Config.hash()).
OPERATIONAL_KEYS = ("eval.workers", "env.engine_workers", "eval.concurrency", "eval.output_dir", "training.output_dir",
                    "training.max_signal_free_steps", "compute.watchdog", "compute.stall_minutes", "compute.watch_after_minutes",
                    "sweep.port",
                    "compute.ray_address", "compute.ray_max_retries", "compute.ray_gpus_per_task",
                    "compute.stop_on", "compute.servers", "compute.host_ram_gib", *COST_KEYS)

# Operational keys that change what a launch reserves or costs: an approved plan covers them.
RESOURCE_KEYS = ("compute.backend", "compute.ray_gpus_per_task", "compute.ray_address", "compute.ray_max_retries",
                 "eval.workers", "compute.watchdog", "compute.servers", "compute.host_ram_gib", *COST_KEYS)


# Keys added after configs' hashes were published: at their default they are left out of the
# identity, so every hash published before still names its config. (A changed default is not a
# key added: when optimize.gate.mode and sleep.gate.mode became the method's strict, quickstart's
# 7876ff12c4e2ae8f became 663b65666ea11953, since a config at the default now means another rule.)
LATER_KEYS = {f"canary.{key}": getattr(CanaryConfig(), key) for key in ("seeds", "split", "sealed_seed")}
LATER_KEYS.update({f"training.{key}": None for key in ("format_warmup_steps", "format_warmup_learning_rate",
                                                        "max_turn_tokens", "max_staleness")})
LATER_KEYS["training.async_rollouts"] = False
LATER_KEYS["canary.attention_window"] = None
LATER_KEYS["canary.call_tokens"] = False
LATER_KEYS["canary.decisive_train"] = False
LATER_KEYS["canary.warmup_draws"] = 1
LATER_KEYS.update({"training.grouping": "task_type", "training.curriculum": "none", "skillgate.oracle_grpo_steps": None,
                   "sleep.transfer": {f.name: f.default for f in dataclasses.fields(TransferConfig)}})
LATER_KEYS.update({"executor.decoding": "generate", "executor.likelihood": "mean", "eval.trials": 1})
LATER_KEYS["training.max_instructions"] = None
LATER_KEYS.update({f"training.{key}": None for key in ("weight_decay", "max_grad_norm", "top_k")})


def identity(data: dict) -> dict:
    """A config's mapping less how and where it runs: operational keys (OPERATIONAL_KEYS:
    parallelism, output paths, monitoring) left out, and compute.backend ray read as local (the
    same rows, evals/distributed.py). Two configs with one identity are one experiment (the same
    Config.hash()), and a run of one resumes under the other."""
    data = copy.deepcopy(data)
    if data.get("sweep") == dataclasses.asdict(SweepConfig()):  # a config that never says how to serve
        del data["sweep"]  # keeps the identity it had before the section existed
    for key in OPERATIONAL_KEYS:
        node, leaf = _parent(data, key)
        node.pop(leaf, None)
    for key, default in LATER_KEYS.items():
        node, leaf = _parent(data, key)
        if leaf in node and node[leaf] == default:
            del node[leaf]
    compute = registry.COMPUTE.get(data.get("compute", {}).get("backend"))
    if compute is not None and compute.distributes:  # the same runs as in this process: the same identity
        data["compute"]["backend"] = registry.IN_PROCESS
    return data


def _parent(data: dict, dotted: str) -> tuple[dict, str]:
    """The mapping holding a dotted key's leaf ({} where a section is absent), and the leaf."""
    *sections, leaf = dotted.split(".")
    for name in sections:
        data = data.get(name) if isinstance(data, dict) else None
        data = data if isinstance(data, dict) else {}
    return data, leaf


# the config's sections (dataclass fields of Config): `--set SECTION=null` would reset one whole
SECTIONS = tuple(f.name for f in dataclasses.fields(Config) if dataclasses.is_dataclass(f.default_factory))


def explain(key: str) -> dict:
    """A config key's help, type and default (from its dataclass field), for `skillos config
    explain KEY`; a section's help and its keys. An unknown key is a ConfigError with a
    did-you-mean, as in a config file."""
    owner, cls, value, parts = None, Config, Config(), str(key).strip().split(".")
    for i, part in enumerate(parts):
        if cls is None:
            raise ConfigError(f"{key}: {'.'.join(parts[:i])} is a setting, not a section; it has no keys")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        if part not in fields:
            where = ".".join(parts[:i]) or "the config"
            raise ConfigError(f"{'.'.join(parts[:i + 1])}: not a key of {where}{did_you_mean(part, fields)}")
        owner, node, value = cls, fields[part], getattr(value, part)
        cls = type(value) if dataclasses.is_dataclass(value) else None
    hint = hints(owner)[node.name]
    out = {"key": ".".join(parts), "help": node.metadata.get("help"),
           "type": getattr(hint, "__name__", None) if isinstance(hint, type) else str(hint)}
    if cls is None:
        out["default"] = value
    else:  # a section: each of its keys, one line
        out["keys"] = {f.name: f.metadata.get("help") for f in dataclasses.fields(cls)}
    return out
