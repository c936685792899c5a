"""One experiment-config schema (YAML) for every command, validated with clear errors; a module per
section, each field's help, bounds and choices in its metadata (config/fields.py reads them).

Unknown keys are errors with a did-you-mean; a wrong type or value names the key and what is
allowed. A key left at None is *not set*: the launch gates (skillos.gates) tell a setting the
config chose from a library default it would silently inherit. Training keys use TRL's
GRPOConfig names where one exists, so configs stay portable.

This module is the public face (`skillos.config.load`, `config.Config`, ...). skillos's own modules
import the submodule that owns a name: config/schema.py (Config), config/loading.py (load,
with_sets, validate), config/derived.py (values computed from a config), one module per section.
"""

from skillos.errors import ConfigError  # noqa: F401

from skillos.config.fields import check_fields, did_you_mean, lookup  # noqa: F401
from skillos.config.experiment import EXPERIMENT_NAME, ExperimentConfig  # noqa: F401
from skillos.config.env import REASONING_DATASETS, REASONING_FAMILIES, SPLITS, ReasoningEnvConfig, EnvConfig
from skillos.config.backend import (
    CURATOR_TOOLS, REASONING_EFFORTS, API_EFFORTS, ANTHROPIC_THINKING_BUDGET, BackendConfig,
    CuratorConfig, ExecutorConfig, JudgeConfig, decoding_problem
)
from skillos.config.training import REPORT_TO, GROUPINGS, CURRICULA, RewardConfig, TrainingConfig  # noqa: F401
from skillos.config.compute import (
    STOP_ON, STOP_GRACE_S, VLLM_UTILIZATION, VLLM_MAX_SEQS, SERVED_ROLES, SERVER_KEYS, GPU_SPEC,
    MAX_GPUS_PER_MACHINE, RAY_ADDRESS, ComputeConfig
)
from skillos.config.eval import RETRIEVAL_MODES, ARMS, RetrievalConfig, ControlConfig, EvalConfig  # noqa: F401
from skillos.config.optimize import OPTIMIZE_TARGETS, SCHEDULES, GATE_MODES, OptimizeGateConfig, OptimizeConfig
from skillos.config.skillgate import SELECTOR_CREDITS, SELECTOR_INITS, SkillGateConfig  # noqa: F401
from skillos.config.sleep import DREAM_FRAMINGS, SleepBudgetConfig, TransferConfig, SleepConfig  # noqa: F401
from skillos.config.canary import CANARY_SPLITS, CanaryConfig  # noqa: F401
from skillos.config.sweep import SWEEP_SERVE, SweepConfig  # noqa: F401
from skillos.config.schema import Config, OPERATIONAL_KEYS, RESOURCE_KEYS, LATER_KEYS, identity, SECTIONS, explain
from skillos.config.derived import (
    ADAPTER_KEY_ENV, relative_to_config, looks_like_path, training_output_dir, completions_per_step,
    groups_per_step, rollouts_per_generation, url_port, server_specs, server_gpus, static_repo_path,
    curator_config, checkpoint_of
)
from skillos.config.rules import check, check_inputs  # noqa: F401
from skillos.config.sets import parse_set, check_structure, apply_sets  # noqa: F401
from skillos.config.matrix import MAX_MATRIX_RUNS, Run, expand  # noqa: F401
from skillos.config.loading import validate, from_dict, revalidate, with_sets, load  # noqa: F401
