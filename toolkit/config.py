"""One experiment-config schema (YAML) for every command, validated with clear errors.

Unknown keys are errors with a did-you-mean; a wrong type or value names the key and what is
allowed. A key left at None is *not set*: the launch gates (skillos.gates) tell a setting the
config chose from a library default it would silently inherit. Training keys use TRL's
GRPOConfig names where one exists, so configs stay portable.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import functools
import hashlib
import json
import math
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from skillos import registry
from skillos.errors import ConfigError

ENVS = registry.ENVIRONMENTS.names()
# The reasoning env's problem sets and generated families (the schema owns the names; a test
# checks them against evals/envs/reasoning's DATASETS and FAMILIES).
REASONING_DATASETS = ("generated", "aime24", "aime25", "gpqa_diamond", "deepmath")
REASONING_FAMILIES = ("remainder-of-power", "linear-equation", "arithmetic-series", "committee-count",
                      "greatest-common-divisor", "divisor-count", "prime-choice", "digit-sum-of-power")
SPLITS = ("train", "valid_seen", "valid_unseen")
BACKENDS = registry.BACKENDS.names()  # their facts (extra, key variable, local or not): skillos/registry.py
COMPUTE_BACKENDS = registry.COMPUTE.names()  # what each does and needs: skillos/registry.py
REPORT_TO = ("tensorboard", "trackio", "wandb", "none")  # TRL / transformers logging integrations
CURATOR_TOOLS = ("paper", "curate_and_advance")
RETRIEVAL_MODES = ("bm25", "shuffled")
ARMS = ("no_memory", "closed_loop", "static_repo", "shuffled")


@dataclass
class ExperimentConfig:
    name: str = field(default="experiment", metadata={
        "help": "the experiment's name in the ledger and in output folders (eval.output_dir/NAME-STAMP, "
                "checkpoints/NAME): 1-100 letters, digits, '.', '_' or '-'"})
    hypothesis: str = field(default="", metadata={
        "help": "what the experiment tests, in a sentence: recorded in the ledger, the report and the approval plan"})
    expected_effect: float | None = field(default=None, metadata={
        "help": "the improvement the hypothesis claims (0.10 = 10 pts)"})
    expected_discordance: float | None = field(default=None, metadata={
        "help": "share of discordant pairs, from a pilot (MDE plan)"})
    fixes_failure: int | None = field(default=None, metadata={
        "help": "a fix run: the ledger failure it addresses (gate 6)"})
    fix_metric: str | None = field(default=None, metadata={
        "help": "a fix run: the metric it should move"})
    before_run: int | None = field(default=None, metadata={
        "help": "a fix run: the ledger run measured before the fix"})
    seeds: list | None = field(default=None, metadata={
        "help": "seed replicates: one run of this experiment per seed (each sets env.seed, and training.seed "
                "when the config trains); with `matrix:`, every combination runs at every seed. All runs are "
                "one experiment in the ledger and one family for the correction"})


@dataclass
class ReasoningEnvConfig:
    """env.name: reasoning (skillos.evals.envs.reasoning). Which problem set each split reads:
    `generated` (offline families, split by hash), or a hub dataset read from local files under
    data_dir (aime24, aime25, gpqa_diamond: held-out; deepmath: train). Nothing downloads."""
    datasets: dict = field(default_factory=lambda: {
        "train": "generated", "valid_seen": "generated", "valid_unseen": "generated"}, metadata={
        "help": "split -> problem set: generated (offline families, split by hash), or aime24 | aime25 | "
                "gpqa_diamond | deepmath read from local files under env.reasoning.data_dir"})
    data_dir: str = field(default="data/reasoning", metadata={
        "help": "where hub problem sets are read from, relative to the config file: DATA_DIR/<hub repo id>/..."})
    families: list | None = field(default=None, metadata={
        "help": "generated problem families; None: every family"})
    choice_seed: int = field(default=0, metadata={"help": "GPQA options are shuffled by this recorded seed"})
    min_group_size: int | None = field(default=None, metadata={
        "help": "curator training: |G| drawn from [this, training.group_size]; None: always training.group_size"})

    def __post_init__(self):
        unknown = set(self.datasets) - set(SPLITS)
        if unknown:
            raise ConfigError(f"env.reasoning.datasets.{sorted(unknown)[0]}: not a split (allowed: {', '.join(SPLITS)})")
        for split, name in self.datasets.items():
            _choice(name, REASONING_DATASETS, f"env.reasoning.datasets.{split}")
        for name in self.families or ():
            _choice(name, REASONING_FAMILIES, "env.reasoning.families")
        if self.min_group_size is not None and self.min_group_size < 2:
            raise ConfigError(f"env.reasoning.min_group_size: at least 2 (the first position is never scored), "
                              f"got {self.min_group_size}")


@dataclass
class EnvConfig:
    name: str = field(default="household", metadata={
        "help": "the environment the games come from (skillos/registry.py ENVIRONMENTS): household (ALFWorld), "
                "reasoning, slate"})
    split: str = field(default="valid_unseen", metadata={"help": "the held-out split the arms are measured on"})
    n_games: int = field(default=60, metadata={"help": "held-out games each arm plays (from env.split)"})
    train_split: str = field(default="train", metadata={
        "help": "games the closed_loop curator learns from before held-out"})
    n_train_games: int = field(default=60, metadata={
        "help": "games drawn from env.train_split: what learning arms curate on before the held-out games, "
                "and optimize's train minibatches"})
    max_steps: int = field(default=30, metadata={
        "help": "actions an executor may take in one game before it ends (a reasoning problem is one answer, "
                "whatever this says)"})
    seed: int = field(default=0, metadata={
        "help": "seed of the game (and problem, slate) draw; experiment.seeds sets it per run"})
    data: str = field(default="generated", metadata={"help": "generated | official ($ALFWORLD_DATA)"})
    task_types: list | None = field(default=None, metadata={
        "help": "household: only these ALFWorld task types, in turn; None: all six"})
    reasoning: ReasoningEnvConfig = field(default_factory=ReasoningEnvConfig, metadata={
        "help": "the reasoning environment's settings (env.name: reasoning)"})


# reasoning_effort: `on` / `none` switch Qwen3-style thinking through the chat template (hf, vllm);
# `low` / `medium` / `high` (and `none`) are the API's field (openai) or a thinking budget (anthropic).
REASONING_EFFORTS = ("none", "on", "low", "medium", "high")
API_EFFORTS = ("low", "medium", "high")
ANTHROPIC_THINKING_BUDGET = {"low": 1024, "medium": 4096, "high": 16384}  # budget_tokens per effort


@dataclass
class BackendConfig:
    backend: str = field(default=registry.NO_MODEL, metadata={
        "help": "who answers (skillos/registry.py BACKENDS): heuristic (offline rules, no model), or a model "
                "backend (openai, anthropic, hf, vllm, ...)"})
    model: str | None = field(default=None, metadata={
        "help": "the model: an API model name, a hub id, or a local checkpoint folder (./ckpt, /abs, ~/x)"})
    base_url: str | None = field(default=None, metadata={
        "help": "an OpenAI-compatible endpoint (vllm serve, OpenRouter, ...)"})
    api_key_env: str | None = field(default=None, metadata={
        "help": "the environment variable holding the key (never the key); None: the backend's usual variable"})
    temperature: float | None = field(default=None, metadata={
        "help": "sampling temperature, sent to every backend's request or sampler; None: the server's default"})
    top_p: float | None = field(default=None, metadata={"help": "nucleus sampling; None: the server's default"})
    top_k: int | None = field(default=None, metadata={
        "help": "top-k sampling (vLLM, hf, Anthropic, OpenAI-compatible servers; the OpenAI API has none)"})
    reasoning_effort: str | bool | None = field(default=None, metadata={
        "help": "hf/vllm: on | none (Qwen3-style enable_thinking through the chat template); "
                "openai: low | medium | high | none (the API's field); anthropic: low | medium | high "
                "(an extended-thinking budget of 1024 / 4096 / 16384 tokens) | none"})
    max_tokens: int | None = field(default=None, metadata={
        "help": "tokens one reply may generate (reasoning included); None: the backend's default"})
    history_length: int | None = field(default=None, metadata={
        "help": "the last action/observation pairs shown to an LLM executor; None or 0: none"})
    timeout_s: float = field(default=120.0, metadata={
        "help": "seconds per request: the API SDKs (openai, anthropic) retry 429 / 5xx / timeouts; hf stops a "
                "generation that runs past it (the game is unmeasured)"})
    max_retries: int = field(default=2, metadata={
        "help": "retries the openai / anthropic SDK makes of a failed request (429, 5xx, timeout)"})

    def __post_init__(self):
        # YAML 1.1 reads a bare `on` / `off` as a boolean: the switch the setting means
        if isinstance(self.reasoning_effort, bool):
            self.reasoning_effort = "on" if self.reasoning_effort else "none"


@dataclass
class CuratorConfig(BackendConfig):
    # The tool surface: the paper's three tools, or curate_and_advance(operations), the one tool
    # skillos train publishes. A trained curator must be evaluated on the surface it learned.
    tools: str = field(default="paper", metadata={
        "help": "the curator's tool surface: paper (the paper's three tools) | curate_and_advance (one "
                "tool, curate_and_advance(operations), the surface skillos train publishes)"})


@dataclass
class JudgeConfig(BackendConfig):
    backend: str | None = field(default=None, metadata={
        "help": "the judge's backend (as executor.backend); None: no judge unless one is named"})


@dataclass
class RewardConfig:  # r = r_task + lambda_fc*r_fc + lambda_cnt*r_cnt + lambda_comp*r_comp
    lambda_fc: float = field(default=1.0, metadata={
        "help": "curator reward weight of r_fc, the share of the curator's operations that were valid "
                "(r = r_task + lambda_fc*r_fc + lambda_cnt*r_cnt + lambda_comp*r_comp)"})
    lambda_cnt: float = field(default=0.1, metadata={
        "help": "curator reward weight of r_cnt, the share of the curator's skills the judge approved (needs a judge "
                "when not 0)"})
    lambda_comp: float = field(default=0.05, metadata={
        "help": "curator reward weight of r_comp, compression: 1 - repo words / input words (floored at 0)"})


@dataclass
class TrainingConfig:
    """GRPO settings, TRL's names. None = not set; a training config must set them (gate 1)."""
    model: str | None = field(default=None, metadata={
        "help": "the model trained: a hub id or a local checkpoint folder (./ckpt, /abs, ~/x)"})
    output_dir: str | None = field(default=None, metadata={
        "help": "where checkpoints and step logs go; None: checkpoints/EXPERIMENT (config.training_output_dir)"})
    learning_rate: float | None = field(default=None, metadata={"help": "TRL GRPOConfig.learning_rate"})
    per_device_train_batch_size: int | None = field(default=None, metadata={
        "help": "TRL GRPOConfig.per_device_train_batch_size: completions per device per micro-batch"})
    gradient_accumulation_steps: int | None = field(default=None, metadata={
        "help": "TRL GRPOConfig.gradient_accumulation_steps: micro-batches per optimizer step (effective batch: "
                "per_device_train_batch_size x this x compute.num_processes completions)"})
    beta: float | None = field(default=None, metadata={"help": "TRL GRPOConfig.beta: the KL coefficient"})
    num_generations: int | None = field(default=None, metadata={
        "help": "TRL GRPOConfig.num_generations: completions per prompt, one GRPO group; it must divide the "
                "effective batch"})
    generation_batch_size: int | None = field(default=None, metadata={
        "help": "TRL GRPOConfig.generation_batch_size: rollouts generated and played together; None: one "
                "optimizer step's completions (TRL's default)"})
    temperature: float | None = field(default=None, metadata={
        "help": "TRL GRPOConfig.temperature: sampling temperature of the trained model's rollouts"})
    max_steps: int | None = field(default=None, metadata={"help": "TRL GRPOConfig.max_steps: optimizer steps"})
    group_size: int | None = field(default=None, metadata={"help": "tasks per curator rollout, |G|"})
    grouping: str = field(default="task_type", metadata={
        "help": "how a rollout's |G| tasks are drawn (training/groups.py): task_type (the method's stream: one type "
                "per group, related tasks) | natural (the natural-distribution ablation: the whole pool, types as "
                "they come)"})
    curriculum: str = field(default="none", metadata={
        "help": "the order of the groups: none (TRL shuffles them) | easy_first (the curriculum ablation: shortest "
                "expert walkthrough first, unshuffled)"})
    max_completion_length: int | None = field(default=None, metadata={
        "help": "TRL GRPOConfig.max_completion_length: TRL caps the whole multi-turn rollout with it"})
    max_turn_tokens: int | None = field(default=None, metadata={
        "help": "tokens one response (one turn of a multi-turn rollout) may generate, the paper's per-response "
                "cap (4096); passed to generation as max_new_tokens (max_tokens under vLLM) while "
                "max_completion_length still caps the whole rollout; None: a turn may use all that is left of it"})
    max_prompt_length: int | None = field(default=None, metadata={
        "help": "prompt tokens kept (training/prompt_cap.py cuts longer prompts; TRL's GRPOConfig has none)"})
    save_steps: int | None = field(default=None, metadata={
        "help": "TRL GRPOConfig.save_steps: optimizer steps between checkpoints"})
    save_total_limit: int | None = field(default=None, metadata={
        "help": "TRL GRPOConfig.save_total_limit: checkpoints kept; None keeps every checkpoint"})
    loss_type: str | None = field(default=None, metadata={"help": "TRL GRPOConfig.loss_type (grpo, dr_grpo, ...)"})
    lr_scheduler_type: str | None = field(default=None, metadata={"help": "TRL GRPOConfig.lr_scheduler_type"})
    seed: int | None = field(default=None, metadata={
        "help": "TRL GRPOConfig.seed; experiment.seeds sets it per run when the config trains"})
    gradient_checkpointing: bool | None = field(default=None, metadata={
        "help": "TRL GRPOConfig.gradient_checkpointing"})
    bf16: bool | None = field(default=None, metadata={"help": "TRL GRPOConfig.bf16: bfloat16 mixed precision"})
    use_vllm: bool | None = field(default=None, metadata={
        "help": "TRL GRPOConfig.use_vllm: generation through vLLM (GPU): colocate shares the training GPUs"})
    vllm_mode: str | None = field(default=None, metadata={"help": "TRL GRPOConfig.vllm_mode: colocate | server"})
    vllm_gpu_memory_utilization: float | None = field(default=None, metadata={
        "help": "TRL GRPOConfig.vllm_gpu_memory_utilization: share of GPU memory vLLM may take"})
    vllm_tensor_parallel_size: int | None = field(default=None, metadata={
        "help": "TRL GRPOConfig.vllm_tensor_parallel_size: GPUs one vLLM model is split over"})
    resume_from_checkpoint: str | None = field(default=None, metadata={
        "help": "a complete checkpoint folder to resume from; None: the newest complete one under output_dir, "
                "if any"})
    checkpoint_gb: float | None = field(default=None, metadata={
        "help": "size of one checkpoint in GB, for the free-disk check"})
    lora: dict | None = field(default=None, metadata={"help": "peft LoraConfig fields; None: full fine-tuning"})
    rollout_concurrency: int | None = field(default=None, metadata={
        "help": "rollouts whose executor games play at once during a step (training/rollouts.py); None: every "
                "rollout of the step; 1: TRL's own one-at-a-time loop"})
    vllm_server_base_url: str | None = field(default=None, metadata={
        "help": "vllm_mode server: where `trl vllm-serve` listens"})
    format_warmup_steps: int | None = field(default=None, metadata={
        "help": "supervised steps on well-formed curator tool calls before GRPO (training/warmup.py): a model "
                "that never writes a call gives GRPO nothing to compare; None: 240 for tiny-qwen2, none for "
                "any other model; 0: none"})
    format_warmup_learning_rate: float | None = field(default=None, metadata={
        "help": "learning rate of the format warm-up (full fine-tuning, AdamW); None: 3e-3, the tiny model's"})
    max_signal_free_steps: int | None = field(default=10, metadata={
        "help": "a launch on GPUs aborts after this many consecutive steps with no learning signal (every "
                "group's rewards alike, or a zero gradient: TRL's frac_reward_zero_std 1 or grad_norm 0), "
                "recorded in the ledger; every run prints 'N of M steps had no learning signal' either way; "
                "None: never abort"})
    report_to: str | list = field(default="tensorboard", metadata={
        "help": "where the step logs go (TRL's integrations): tensorboard (event files under "
                "OUTPUT_DIR/runs/, read by `tensorboard --logdir OUTPUT_DIR`), trackio, wandb, or none; "
                "a list for several. Nothing leaves the machine unless a remote one is named."})

    def is_set(self) -> bool:
        """Whether the config trains: any field set away from its default."""
        return any(getattr(self, f.name) != (f.default if f.default is not dataclasses.MISSING else f.default_factory())
                   for f in dataclasses.fields(self))

    def reporters(self) -> list:
        """`report_to` as a list (it may be one name or several)."""
        return [self.report_to] if isinstance(self.report_to, str) else list(self.report_to or [])

    def __post_init__(self):
        names = self.reporters()
        for name in names:
            _choice(name, REPORT_TO, "training.report_to")
        if len(set(names)) != len(names):
            raise ConfigError(f"training.report_to: {names} names one integration twice")
        if "none" in names and len(names) > 1:  # transformers refuses it when the trainer starts
            raise ConfigError(f"training.report_to: {names}: 'none' cannot stand beside other integrations; "
                              "write none alone, or list only the ones to use")


@dataclass
class ComputeConfig:
    backend: str = field(default="local", metadata={
        "help": "where a launch runs: local | accelerate | modal (training) | ray (eval, sweep, matrix, canary: each "
                "arm, checkpoint or canary run a Ray task on compute.ray_address, the driver writing every row; "
                f"{registry.RAY_INSTALL})"})
    num_processes: int = field(default=1, metadata={
        "help": "training processes across every machine (accelerate: one per GPU); multiplies the effective "
                "batch"})
    deepspeed_config: str | None = field(default=None, metadata={
        "help": "a DeepSpeed config file for the accelerate launch, relative to the config file"})
    gpu: str | None = field(default=None, metadata={"help": 'the GPUs a launch uses, TYPE or TYPE:N (N >= 1), e.g. '
                                                    '"H100:8": Modal\'s request, the plan\'s GPU-hours and the gates '
                                                    'that guard GPU launches (approved plan, canary)'})
    step_minutes: float | None = field(default=None, metadata={
        "help": "measured minutes per training step, for save_steps"})
    max_checkpoint_gap_minutes: float = field(default=60.0, metadata={"help": "the most work a crash may lose"})
    watchdog: bool = field(default=True, metadata={"help": "gate 7: the launch runs under the watchdog"})
    stall_minutes: float = field(default=30.0, metadata={
        "help": "the watchdog alarms when the output folder has not grown, or the device has been idle, this "
                "long while the job is alive"})
    stop_on: list = field(default_factory=list, metadata={
        "help": "alarms on which the watchdog stops a training launch (SIGTERM, then SIGKILL after "
                "config.STOP_GRACE_S), recorded in the ledger: stall (the output folder has not grown for "
                "stall_minutes while the job lives), device-idle (the GPUs idle that long); empty: it alarms and "
                "records only"})
    # The step plan (training/plan.py, printed by `train --dry-run`) and multi-GPU layouts.
    executor_latency_s: float | None = field(default=None, metadata={
        "help": "seconds per executor action at the endpoint (the step plan)"})
    gpu_seconds_per_step: float | None = field(default=None, metadata={
        "help": "a step's generation + update with no executor wait (the step plan)"})
    vllm_server_gpus: int = field(default=0, metadata={
        "help": "GPUs per machine for `trl vllm-serve` (training.vllm_mode: server)"})
    servers: dict = field(default_factory=dict, metadata={
        "help": "model servers a launch starts on GPUs of its own (`vllm serve`, reached by the role's openai "
                "backend at its base_url), by role: {executor: {gpus: 1}, judge: {gpus: 2}}; each may say "
                "tensor_parallel_size (default: its gpus), gpu_memory_utilization (0.9), max_model_len (the "
                "model's), max_num_seqs (256). The memory plan (gate 7) places them and the step plan caps "
                "concurrency at the executor server's slots"})
    num_machines: int = field(default=1, metadata={
        "help": "accelerate multi-node: machines; num_processes counts every machine's"})
    machine_rank: int = field(default=0, metadata={
        "help": "accelerate multi-node: this machine's rank (0: the main one)"})
    main_process_ip: str | None = field(default=None, metadata={
        "help": "accelerate multi-node: the main machine's address (needed when num_machines > 1)"})
    main_process_port: int = field(default=29500, metadata={"help": "accelerate multi-node: the main machine's port"})
    # compute.backend ray (evals/distributed.py): where the arms' tasks run and what each asks for.
    ray_address: str | None = field(default=None, metadata={
        "help": "compute.backend ray: the cluster to join (ray.init(address=...), e.g. ray://HEAD:10001 or auto); "
                "None: a local cluster started for the run and stopped after it"})
    ray_max_retries: int = field(default=3, metadata={
        "help": "compute.backend ray: times a task is run again after its worker dies (an arm restarts from the "
                "rows the run folder already holds, a canary run from its folder)"})
    ray_gpus_per_task: float | None = field(default=None, metadata={
        "help": "compute.backend ray: GPUs each task reserves; None: 1 for an arm whose executor, curator or judge "
                "runs its model in the task (hf, vllm), or a canary run that trains one, when compute.gpu is set, "
                "else 0 (Ray hides the GPUs from a task that reserves none)"})


@dataclass
class RetrievalConfig:
    top_k: int = field(default=5, metadata={
        "help": "skills retrieved from the repo for each game, shown to the executor"})
    mode: str = field(default="bm25", metadata={
        "help": "bm25 (skills ranked by the task) | shuffled (a random pick: the control for retrieval)"})


@dataclass
class ControlConfig:
    arm: str = field(default="no_memory", metadata={
        "help": "the arm every other arm is compared to; one of eval.arms (measured in the same run)"})
    max_age_days: float = field(default=7.0, metadata={"help": "a control older than this is stale (gate 4)"})


@dataclass
class EvalConfig:
    arms: list = field(default_factory=lambda: ["no_memory", "closed_loop"], metadata={
        "help": "the arms played on the same held-out games: no_memory | closed_loop | static_repo | shuffled | "
                "repo:NAME (eval.static_repos) | curator:NAME (eval.curators)"})
    control: ControlConfig = field(default_factory=ControlConfig, metadata={
        "help": "the control arm and how old it may be (or just the arm's name)"})
    max_error_rate: float = field(default=0.02, metadata={
        "help": "unmeasured share above which an arm aborts (gate 2)"})
    alpha: float = field(default=0.05, metadata={
        "help": "significance level of the paired tests (corrected across the family)"})
    power: float = field(default=0.8, metadata={"help": "target power of the minimum-detectable-effect plan"})
    bootstrap: int = field(default=10_000, metadata={"help": "bootstrap resamples for confidence intervals"})
    static_repo: str | None = field(default=None, metadata={"help": "skill folder for the static_repo arm"})
    static_repos: dict = field(default_factory=dict, metadata={
        "help": 'name -> folder, for arms "repo:NAME" (sweeps)'})
    curators: dict = field(default_factory=dict, metadata={
        "help": 'name -> checkpoint, for arms "curator:NAME" (sweeps)'})
    output_dir: str = field(default="runs", metadata={
        "help": "where run folders go (relative to the working directory)"})
    workers: int = field(default=0, metadata={"help": "arms played in parallel processes; 0: one per CPU core"})
    concurrency: int = field(default=1, metadata={
        "help": "games in flight per arm (model backends: 16-64; heuristic: 1)"})
    wave_size: int = field(default=1, metadata={
        "help": "learning arms: games played on one repo snapshot before curating"})


@dataclass
class OptimizeGateConfig:
    mode: str = field(default="strict", metadata={
        "help": "strict: the method's rule (SkillOpt and SkillOpt-Sleep), accept a candidate whose held-out "
                "score is higher, any gain; paired: ours, the mean paired difference must exceed k·SE, so a copy "
                "of the incumbent or one flipped task on a small split is not accepted (a stricter bar: it can "
                "reject a real small gain, and the run prints the smallest it can accept)"})
    k: float = field(default=2.0, metadata={
        "help": "paired mode: standard errors the mean paired gain must exceed for a candidate to be accepted"})
    max_unmeasured: float = field(default=0.1, metadata={
        "help": "share of validation tasks unmeasured above which a verdict is indecisive"})


@dataclass
class OptimizeConfig:
    """skillos optimize (text-space, SkillOpt-style). Train minibatches come from env.train_split,
    candidates are gated on the validation split, and env.split is the sealed test split."""
    optimizer: BackendConfig = field(default_factory=BackendConfig, metadata={
        "help": "who proposes edits: heuristic, or a model backend"})
    seed_skills: str | None = field(default=None, metadata={
        "help": "the starting skill folder (relative to the config); None: empty"})
    target: str = field(default="repo", metadata={
        "help": "repo: train a skill folder (edits add, replace or delete whole skills); document: train ONE "
                "SKILL.md (optimize.document), its sections (markdown headings) the edit units, and write "
                "best_skill.md with its history (SkillOpt's setting)"})
    document: str | None = field(default=None, metadata={
        "help": "target document: the SKILL.md (or a folder holding one) to train, relative to the config; None: "
                "the one skill of optimize.seed_skills, or a new document with only a title"})
    epochs: int = field(default=2, metadata={"help": "passes over the train games (env.n_train_games)"})
    minibatch_size: int = field(default=6, metadata={
        "help": "train games played per step, whose failures the proposer reads"})
    max_lines: int = field(default=40, metadata={
        "help": "the textual learning rate, in changed lines of skill text (difflib over the old and new text; a "
                "rewritten line counts 1) one step may make, at the first step; an edit that does not fit what is "
                "left of the step's budget is refused and counted, so a whole-skill replace needs a budget that "
                "covers every line it changes"})
    min_lines: int | None = field(default=None, metadata={
        "help": "... decaying to this many changed lines at the last step; None: half of optimize.max_lines"})
    schedule: str = field(default="cosine", metadata={
        "help": "how the line budget decays from max_lines to min_lines: cosine | linear | constant"})
    slow_update: bool = field(default=False, metadata={
        "help": "at each epoch's end, one more gated candidate: the skill with cross-epoch guidance written into its "
                "protected block (<!-- skillos:slow-update --> ... <!-- /skillos:slow-update -->, which ordinary "
                "steps never edit), and the epoch's editing lessons appended to the meta skill; both versioned in "
                "the run folder"})
    meta_skill: str | None = field(default=None, metadata={
        "help": "the meta skill (how to edit skills) the model-backed proposer reads, a SKILL.md relative to the "
                "config; None: training/configs/meta-skill/SKILL.md"})
    validation_split: str = field(default="valid_seen", metadata={
        "help": "the split candidates are gated on (not env.split, the sealed test split)"})
    n_validation: int = field(default=30, metadata={"help": "validation tasks each candidate is gated on"})
    gate: OptimizeGateConfig = field(default_factory=OptimizeGateConfig, metadata={
        "help": "when a candidate is accepted over the incumbent"})

    @property
    def last_lines(self) -> int:
        """The budget of the last step: optimize.min_lines, else half of optimize.max_lines."""
        return self.min_lines if self.min_lines is not None else max(1, self.max_lines // 2)


GROUPINGS = ("task_type", "natural")  # how a curator rollout's tasks are drawn (training/groups.py)
CURRICULA = ("none", "easy_first")  # the order of the groups (training/groups.py)
OPTIMIZE_TARGETS = ("repo", "document")  # what `skillos optimize` trains: a skill folder, or one SKILL.md
SCHEDULES = ("cosine", "linear", "constant")  # how a textual learning rate decays (optimize and sleep)
GATE_MODES = ("paired", "strict")  # evals/stats.py's gate modes (a test checks they agree)

# SkillGate's training profiles (training/selector_credit.py says what each does to the loss).
SELECTOR_CREDITS = ("no_skill", "mixed_task_reward", "mixed_separated", "hybrid_slate", "task-mask-only",
                    "first-oracle", "clean-oracle")
SELECTOR_INITS = ("base", "sft", "gold-bc", "oracle-grpo")  # where selector GRPO starts (training/selector_sft.py)
TRAINERS = registry.TRAINERS.names()  # what each one runs: training/registry.py


@dataclass
class SkillGateConfig:
    """SkillGate: the executor learns which skill of a slate to read (evals/envs/slate/slates.py,
    training/selector_trainer.py). `trainer` is what `skillos train` runs (training/registry.py).
    A slate holds `slate_size` skills: the oracle, `n_misleading` built from it, `n_irrelevant`,
    and relevant ones for the rest (`n_relevant`)."""
    trainer: str = field(default="curator", metadata={
        "help": "what skillos train runs: curator | selector (GRPO + selector credit) | selector-bc | selector-dpo"})
    slate_repo: str | None = field(default=None, metadata={
        "help": "skill folder slates are drawn from (relative to the config)"})
    slate_size: int = field(default=16, metadata={"help": "skills in one slate (the method's slates: 16)"})
    n_misleading: int = field(default=5, metadata={
        "help": "mutated oracles per slate; DPO pairs each gold read with (up to 5 of) these"})
    n_irrelevant: int = field(default=5, metadata={"help": "skills per slate unrelated to the task"})
    selector_credit: str | bool = field(default="mixed_task_reward", metadata={
        "help": "the selector's loss profile (training/selector_credit.py): no_skill | mixed_task_reward (outcome "
                "only; `off` is its old name) | mixed_separated | hybrid_slate | task-mask-only (coef exactly 0) | "
                "first-oracle | clean-oracle (the method)"})
    selector_coef: float = field(default=1.0, metadata={
        "help": "coef x the selector advantage on the selection tokens, for the credited profiles "
                "(training/selector_credit.py); task-mask-only needs exactly 0"})
    init: str = field(default="base", metadata={
        "help": "where selector GRPO starts: base | sft (SFT on a teacher's whole winning trajectories that read the oracle first) | gold-bc (SFT on the "
                "gold reads: the Gold-BC baseline as a start) | oracle-grpo (the method's: outcome GRPO with the "
                "oracle as the only skill shown, exported mid-training and merged)"})
    teacher: BackendConfig = field(default_factory=BackendConfig, metadata={"help": "init sft: any model backend"})
    sft_steps: int = field(default=60, metadata={"help": "SFTTrainer steps of the sft / gold-bc start"})
    sft_learning_rate: float = field(default=1.0e-5, metadata={
        "help": "learning rate of the sft / gold-bc start"})
    oracle_grpo_steps: int | None = field(default=None, metadata={
        "help": "init oracle-grpo: GRPO steps on oracle-only slates before the export; None: half of "
                "training.max_steps (the method exports its oracle-GRPO run mid-training)"})
    max_tool_calls: int = field(default=6, metadata={"help": "reads + actions in one training rollout"})
    eval_spec: str | None = field(default=None, metadata={
        "help": "the frozen eval protocol (evals/protocol.py), relative to the config"})
    repeats: int = field(default=1, metadata={"help": "plays of each held-out game per arm (pass@k / pass^k)"})

    @property
    def n_relevant(self) -> int:
        return self.slate_size - 1 - self.n_misleading - self.n_irrelevant

    def __post_init__(self):
        if self.selector_credit in (False, "off"):  # the old name; YAML 1.1 reads a bare `off` as False
            self.selector_credit = "mixed_task_reward"
        _choice(self.trainer, TRAINERS, "skillgate.trainer")
        _choice(self.selector_credit, SELECTOR_CREDITS, "skillgate.selector_credit")
        if self.init == "oracle-warmup":  # its meaning moved: never let an old config run the new recipe silently
            raise ConfigError("skillgate.init: oracle-warmup was SFT on the gold reads, now gold-bc; the method's start "
                              "(outcome GRPO with the oracle alone on the slate) is oracle-grpo: choose one")
        _choice(self.init, SELECTOR_INITS, "skillgate.init")
        for key in ("slate_size", "n_misleading", "n_irrelevant", "max_tool_calls", "repeats", "sft_steps"):
            if getattr(self, key) < (1 if key in ("slate_size", "max_tool_calls", "repeats", "sft_steps") else 0):
                raise ConfigError(f"skillgate.{key}: too small, got {getattr(self, key)}")
        if self.n_relevant < 0:
            raise ConfigError(f"skillgate.slate_size: {self.slate_size} cannot hold the oracle, n_misleading "
                              f"{self.n_misleading} and n_irrelevant {self.n_irrelevant}; raise it to at least "
                              f"{1 + self.n_misleading + self.n_irrelevant}")
        if self.init == "sft" and not registry.uses_model(self.teacher.backend):
            raise ConfigError("skillgate.init: sft clones a teacher's trajectories, so skillgate.teacher needs a "
                              "model backend (openai, anthropic, hf, vllm); gold-bc clones the gold reads")
        if self.oracle_grpo_steps is not None and self.oracle_grpo_steps < 1:
            raise ConfigError(f"skillgate.oracle_grpo_steps: at least 1 GRPO step, got {self.oracle_grpo_steps}")


@dataclass
class SleepBudgetConfig:
    """Hard caps per night: a call that could pass one is not made; the night stops cleanly."""
    max_calls: int = field(default=300, metadata={"help": "model calls (replays, judge, optimizer) in one night"})
    max_tokens: int = field(default=600_000, metadata={
        "help": "prompt + completion tokens in one night, a call's worst case reserved before it"})
    max_minutes: float = field(default=60.0, metadata={"help": "wall-clock minutes of one night"})


@dataclass
class TransferConfig:
    """skillos sleep transfer: a skill run inside a real coding-agent CLI, with and without it,
    on reviewed tasks (training/sleep/transfer.py). Every cap is checked before a call is made."""
    agent: str = field(default="claude", metadata={
        "help": "the coding agent: claude (`claude -p`) | codex (`codex exec`); registry.AGENT_CLIS"})
    repeats: int = field(default=1, metadata={"help": "runs of each task in each arm"})
    max_calls: int = field(default=40, metadata={
        "help": "agent runs a transfer may make; one that needs more (tasks x 2 arms x repeats) is refused before any"})
    max_minutes: float = field(default=30.0, metadata={
        "help": "wall-clock minutes; past them the remaining runs are not made and count as unmeasured"})
    max_cost_usd: float | None = field(default=None, metadata={
        "help": "stop when the agent's reported cost reaches this (Claude Code reports it; Codex does not); None: no cap"})
    timeout_s: float = field(default=300.0, metadata={"help": "one agent run; a run past it is unmeasured"})

    def __post_init__(self):
        _choice(self.agent, registry.AGENT_CLIS.names(), "sleep.transfer.agent")
        for key in ("repeats", "max_calls"):
            if getattr(self, key) < 1:
                raise ConfigError(f"sleep.transfer.{key}: at least 1, got {getattr(self, key)}")
        for key in ("max_minutes", "timeout_s", "max_cost_usd"):
            if getattr(self, key) is not None and getattr(self, key) <= 0:
                raise ConfigError(f"sleep.transfer.{key}: must be above 0, got {getattr(self, key)}")


@dataclass
class SleepConfig:
    """skillos sleep: learn one skill from the agent's own Claude Code and Codex sessions. Mined
    tasks are split train / validation / sealed test by content hash; candidates are gated with
    optimize's machinery; a night stages a proposal and never writes the live skill."""
    skill: str | None = field(default=None, metadata={
        "help": "the live skill folder (holding SKILL.md) a night improves"})
    sources: list = field(default_factory=lambda: ["claude", "codex"], metadata={
        "help": "whose session transcripts are mined: claude (Claude Code) and/or codex"})
    claude_dir: str = field(default="~/.claude", metadata={
        "help": "Claude Code's folder; its transcripts are read from CLAUDE_DIR/projects"})
    codex_dir: str = field(default="~/.codex", metadata={
        "help": "Codex's folder, where its session transcripts are read"})
    project: str | None = field(default=None, metadata={
        "help": "only sessions whose working directory contains this; None: all"})
    since: str | None = field(default=None, metadata={"help": "ISO date: only sessions started on or after it"})
    max_sessions: int = field(default=500, metadata={"help": "the most recent sessions after the filters"})
    subagents: bool = field(default=False, metadata={"help": "also harvest Claude Code sub-agent sessions"})
    tasks: str | None = field(default=None, metadata={
        "help": "a reviewed task file (JSONL) replaces mining (privacy-safe runs)"})
    model: BackendConfig = field(default_factory=BackendConfig, metadata={"help": "replays tasks (a model backend)"})
    optimizer: BackendConfig = field(default_factory=BackendConfig, metadata={
        "help": "proposes edits: heuristic or a model"})
    steps: int = field(default=2, metadata={"help": "candidates proposed per night"})
    max_edits: int = field(default=4, metadata={
        "help": "the textual learning rate: lines one step may change, at the first step ..."})
    min_edits: int = field(default=2, metadata={"help": "... decaying to this at the last"})
    schedule: str = field(default="cosine", metadata={
        "help": "how the edit budget decays from max_edits to min_edits: cosine | linear | constant"})
    validation_share: float = field(default=0.34, metadata={
        "help": "of mined tasks, by content hash (SkillOpt-Sleep's held-out share)"})
    test_share: float = field(default=0.2, metadata={
        "help": "of mined tasks, by content hash; sealed: read once, at the end of the night"})
    gate: OptimizeGateConfig = field(default_factory=OptimizeGateConfig, metadata={
        "help": "when a candidate is accepted (optimize's gate)"})
    no_regress: bool = field(default=False, metadata={
        "help": "also reject a candidate that breaks any validation task"})
    edit_anywhere: bool = field(default=False, metadata={
        "help": "edits may rewrite the whole body, not only the learned block"})
    max_consecutive_errors: int = field(default=5, metadata={
        "help": "failed calls in a row that end the night as an outage"})
    dream_factor: int = field(default=0, metadata={
        "help": "perturbed variants of each mined train task, replayed beside it (SkillOpt's dream_factor): the same "
                "request reworded, the same checks; by rules, or by sleep.optimizer when it is a model (one call per "
                "task, under the night's budget). Only train tasks are dreamed; 0: none"})
    llm_miner: bool = field(default=False, metadata={
        "help": "also ask sleep.optimizer (a model backend) for checks of each request the rules found none for; "
                "a request is kept only with checks the task-file rules accept (a rubric only with a judge), and "
                "every call counts against the night's budget"})
    budget: SleepBudgetConfig = field(default_factory=SleepBudgetConfig, metadata={
        "help": "hard caps per night: calls, tokens, minutes"})
    home: str | None = field(default=None, metadata={
        "help": "where digests, nights, proposals and backups go; None: $SKILLOS_HOME/sleep"})
    transfer: TransferConfig = field(default_factory=TransferConfig, metadata={
        "help": "skillos sleep transfer: the skill inside a real coding-agent CLI, with and without it"})

    def __post_init__(self):
        # The sleep settings' own rules, here only (a night reads them validated). What a night
        # needs of the rest of the machine (the live skill, a replay backend, dream's framings) is
        # checked by training/sleep/night.py's preflight, at the night.
        models = registry.MODEL_BACKENDS
        if self.optimizer.backend not in (registry.NO_MODEL, *models):
            raise ConfigError(f"sleep.optimizer.backend: heuristic or one of {', '.join(models)}")
        _choice(self.gate.mode, GATE_MODES, "sleep.gate.mode")
        _choice(self.schedule, SCHEDULES, "sleep.schedule")
        if self.min_edits > self.max_edits:
            raise ConfigError(f"sleep.min_edits ({self.min_edits}) is above sleep.max_edits ({self.max_edits})")
        for key in ("steps", "max_edits", "min_edits", "max_consecutive_errors", "max_sessions"):
            if getattr(self, key) < 1:
                raise ConfigError(f"sleep.{key}: at least 1, got {getattr(self, key)}")
        if self.llm_miner and self.optimizer.backend not in models:
            raise ConfigError("sleep.llm_miner: the LLM miner asks sleep.optimizer, which is heuristic; set "
                              f"sleep.optimizer.backend to one of {', '.join(models)} or turn llm_miner off")
        b = self.budget
        if b.max_calls < 1 or b.max_tokens < 1 or b.max_minutes <= 0:
            raise ConfigError("sleep.budget: max_calls, max_tokens and max_minutes must be positive")
        if not (0 < self.validation_share < 1 and 0 <= self.test_share < 1
                and self.validation_share + self.test_share < 1):
            raise ConfigError("sleep.validation_share and sleep.test_share: shares in (0, 1) that leave train tasks")


@dataclass
class CanaryConfig:
    """A learning canary's miniature (training/canary, training/configs/canary-*.yaml): the
    supervised warm start the tiny model trains from before GRPO."""
    warmup_steps: int = field(default=400, metadata={"help": "supervised steps of the warm start"})
    warmup_groups: int = field(default=12, metadata={
        "help": "train groups whose first curator inputs the warm start answers"})
    warmup_learning_rate: float = field(default=3e-3, metadata={"help": "learning rate of the warm start"})
    split: str = field(default="sealed", metadata={
        "help": "the held-out games a canary is judged on. sealed: drawn with env seed canary.sealed_seed (+ the "
                "training seed, for optimize), games tuning never reads; the ledger counts every judged look at "
                "them and the pooled p is Bonferroni-corrected over the looks; only a sealed canary vouches for a "
                "launch. tuning: env.seed's held-out games (`skillos canary --tune`, --quick), free to look at, "
                "vouching for nothing"})
    sealed_seed: int = field(default=1000, metadata={
        "help": "the env seed of the sealed held-out games; a new value draws a fresh sealed split (its looks "
                "start at 0: the old split's looks stay in the ledger)"})
    seeds: list = field(default_factory=lambda: [0, 1, 2], metadata={
        "help": "training seeds: each trains the run and both negative controls from the one warm start and is "
                "judged on its own evaluation draws; the pass rule (training/canary RULE) pools them and asks "
                "every seed's run to move up"})


CANARY_SPLITS = ("sealed", "tuning")
SWEEP_SERVE = ("local", "adapters")


@dataclass
class SweepConfig:
    """How `skillos sweep` serves its checkpoint arms (training/serve_adapters.py)."""
    serve: str = field(default="local", metadata={
        "help": "local: each curator:NAME arm loads its checkpoint in its own process (curator.backend hf "
                "or vllm); adapters: one `vllm serve BASE --enable-lora` serves every LoRA checkpoint as an "
                "adapter named after its arm, and each arm's curator calls its own adapter (the request's "
                "model field) concurrently. GPU only; `skillos sweep --dry-run` prints the plan"})
    base_model: str | None = field(default=None, metadata={
        "help": "adapters: the base model the server loads; None: the one every checkpoint's "
                "adapter_config.json names (they must agree)"})
    max_loras: int | None = field(default=None, metadata={
        "help": "adapters: vLLM --max-loras (adapters resident at once); None: one per checkpoint arm. "
                "Fewer than the arms is refused: concurrent arms would evict each other's adapters"})
    max_lora_rank: int | None = field(default=None, metadata={
        "help": "adapters: vLLM --max-lora-rank; None: the largest checkpoint r, rounded up to a rank vLLM takes"})
    port: int = field(default=8000, metadata={"help": "adapters: the port the server listens on, on 127.0.0.1"})

    def __post_init__(self):
        _choice(self.serve, SWEEP_SERVE, "sweep.serve")


@dataclass
class Config:
    experiment: ExperimentConfig = field(default_factory=ExperimentConfig, metadata={
        "help": "what the experiment is and what it claims"})
    env: EnvConfig = field(default_factory=EnvConfig, metadata={"help": "where the games come from"})
    executor: BackendConfig = field(default_factory=BackendConfig, metadata={"help": "the agent that plays the games"})
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
        data["resources"] = {key: _get(self, key) for key in RESOURCE_KEYS}
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


# Keys that say how or where a run executes, not what it measures: two configs that differ only
# here are the same experiment (the same family, the same Config.hash()).
OPERATIONAL_KEYS = ("eval.workers", "eval.concurrency", "eval.output_dir", "training.output_dir",
                    "training.max_signal_free_steps", "compute.watchdog", "compute.stall_minutes", "sweep.port",
                    "compute.ray_address", "compute.ray_max_retries", "compute.ray_gpus_per_task",
                    "compute.stop_on", "compute.servers")

# Operational keys that change what a launch reserves or costs: an approved plan covers them.
RESOURCE_KEYS = ("compute.backend", "compute.ray_gpus_per_task", "compute.ray_address", "compute.ray_max_retries",
                 "eval.workers", "compute.watchdog", "compute.servers")


# Keys added after configs' hashes were published: at their default they are left out of the
# identity, so every hash published before still names its config. (A changed default is not a
# key added: when optimize.gate.mode and sleep.gate.mode became the method's strict, quickstart's
# 7876ff12c4e2ae8f became 663b65666ea11953, since a config at the default now means another rule.)
LATER_KEYS = {f"canary.{key}": getattr(CanaryConfig(), key) for key in ("seeds", "split", "sealed_seed")}
LATER_KEYS.update({f"training.{key}": None for key in ("format_warmup_steps", "format_warmup_learning_rate",
                                                        "max_turn_tokens")})
LATER_KEYS.update({"training.grouping": "task_type", "training.curriculum": "none", "skillgate.oracle_grpo_steps": None,
                   "sleep.transfer": {f.name: f.default for f in dataclasses.fields(TransferConfig)}})


def identity(data: dict) -> dict:
    """A config's mapping less how and where it runs: operational keys (OPERATIONAL_KEYS:
    parallelism, output paths, monitoring) left out, and compute.backend ray read as local (the
    same rows, evals/distributed.py). Two configs with one identity are one experiment (the same
    Config.hash()), and a run of one resumes under the other."""
    data = copy.deepcopy(data)
    if data.get("sweep") == dataclasses.asdict(SweepConfig()):  # a config that never says how to serve
        del data["sweep"]  # keeps the identity it had before the section existed
    for key in OPERATIONAL_KEYS:
        section, _, leaf = key.partition(".")
        data.get(section, {}).pop(leaf, None)
    for key, default in LATER_KEYS.items():
        section, _, leaf = key.partition(".")
        if leaf in data.get(section, {}) and data[section][leaf] == default:
            del data[section][leaf]
    compute = registry.COMPUTE.get(data.get("compute", {}).get("backend"))
    if compute is not None and compute.distributes:  # the same runs as in this process: the same identity
        data["compute"]["backend"] = registry.IN_PROCESS
    return data


def did_you_mean(key: str, options, list_allowed: bool = True) -> str:
    """' (did you mean X?)' for the closest option; else the allowed options, or nothing."""
    close = difflib.get_close_matches(key, list(options), n=1)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (allowed: {', '.join(options)})" if list_allowed else ""


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
    hint = _hints(owner)[node.name]
    out = {"key": ".".join(parts), "help": node.metadata.get("help"),
           "type": getattr(hint, "__name__", None) if isinstance(hint, type) else str(hint)}
    if cls is None:
        out["default"] = value
    else:  # a section: each of its keys, one line
        out["keys"] = {f.name: f.metadata.get("help") for f in dataclasses.fields(cls)}
    return out


def _build(cls, data: Any, where: str):
    if data is None:
        return cls()
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values = {}
    for key, value in data.items():
        if key not in fields:
            raise ConfigError(f"{f'{where}.' if where else ''}{key}: unknown key{did_you_mean(str(key), fields)}"
                              f"{_close_help(cls, str(key))}")
        f = fields[key]
        sub = f.default_factory if f.default_factory is not dataclasses.MISSING else None
        path = f"{where}.{key}" if where else key
        if sub is ControlConfig and isinstance(value, str):
            value = {"arm": value}  # `control: no_memory` is short for `control: {arm: no_memory}`
        if dataclasses.is_dataclass(sub):
            values[key] = _build(sub, value, path)
        else:
            values[key] = _check_type(value, _hints(cls)[key], path)
    return cls(**values)


@functools.lru_cache(maxsize=None)
def _hints(cls) -> dict:
    """A config section's resolved type hints, once per class (resolving them was 95% of a load:
    a 512-run matrix took a minute to check)."""
    return typing.get_type_hints(cls)


def _close_help(cls, key: str) -> str:
    """For an unknown key: the help and default of the key it is closest to (what was meant)."""
    close = difflib.get_close_matches(key, [f.name for f in dataclasses.fields(cls)], n=1)
    if not close:
        return ""
    f = next(f for f in dataclasses.fields(cls) if f.name == close[0])
    if dataclasses.is_dataclass(f.default_factory):
        return f"; {close[0]}: {f.metadata.get('help')}"
    default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
    return f"; {close[0]}: {f.metadata.get('help')} (default {json.dumps(default)})"


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
        if kind is float and isinstance(value, str) and _EXPONENT.fullmatch(value.strip()):
            return float(value)  # YAML 1.1 reads `1e-6` (no dot) as a string
        if isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool):
            return value
    names = " or ".join("null" if k is type(None) else (typing.get_origin(k) or k).__name__
                        for k in allowed)
    raise ConfigError(f"{where}: expected {names}, got {value!r}")


_EXPONENT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def _choice(value, allowed, where):
    if value not in allowed:
        raise ConfigError(f"{where}: {value!r} is not one of {', '.join(allowed)}")


DECODING_SECTIONS = ("executor", "curator", "judge", "optimize.optimizer", "sleep.model", "sleep.optimizer")


def decoding_problem(section: str, b: BackendConfig) -> str | None:
    """Why backend `b.backend` cannot carry this section's decoding settings as configured (one
    line, naming the key and the fix), else None. A setting a backend would drop or the API would
    reject on every call is refused here, before anything runs, never sent and lost."""
    effort = b.reasoning_effort
    if effort is not None and effort not in REASONING_EFFORTS:
        return f"{section}.reasoning_effort: {effort!r} is not one of {', '.join(REASONING_EFFORTS)}"
    if not registry.uses_model(b.backend):
        return None
    if b.backend in registry.LOCAL_BACKENDS:  # decoding through the model's own chat template and sampler
        if effort in API_EFFORTS:
            return (f"{section}.reasoning_effort: {effort!r} has no meaning for backend {b.backend}: Qwen3-style "
                    "thinking is on or off through the chat template (enable_thinking); use on or none")
        if b.temperature == 0 and (b.top_p is not None or b.top_k is not None):
            return (f"{section}.top_p / top_k: temperature 0 is greedy decoding on backend {b.backend}, which "
                    "ignores them; unset them or set a temperature above 0")
    elif effort == "on" and not (b.backend == "openai" and b.base_url):
        return (f"{section}.reasoning_effort: 'on' is the chat-template switch of hf, vllm and a `vllm serve` "
                f"base_url; backend {b.backend} takes {', '.join(API_EFFORTS)} or none")
    if b.backend == "openai" and b.top_k is not None and not b.base_url:
        return (f"{section}.top_k: the OpenAI API has no top_k and rejects the request; unset it, or set "
                f"{section}.base_url to a server that reads it (vllm serve, OpenRouter)")
    if b.backend == "anthropic" and effort in API_EFFORTS:
        budget = ANTHROPIC_THINKING_BUDGET[effort]
        if b.temperature not in (None, 1.0) or b.top_k is not None or (b.top_p is not None and b.top_p < 0.95):
            return (f"{section}: extended thinking (reasoning_effort {effort}) takes no temperature other than 1, "
                    "no top_k and top_p only in [0.95, 1] (the API rejects the request); unset them or set "
                    "reasoning_effort none")
        if b.max_tokens is not None and b.max_tokens <= budget:
            return (f"{section}.max_tokens: {b.max_tokens} leaves no room for reasoning_effort {effort}'s thinking "
                    f"budget of {budget} tokens; raise it above {budget}")
    return None


def check_decoding(cfg: Config) -> None:
    for section in DECODING_SECTIONS:
        problem = decoding_problem(section, _get(cfg, section))
        if problem:
            raise ConfigError(problem)


def validate(cfg: Config) -> Config:
    check_bounds(cfg)
    if cfg.matrix or cfg.experiment.seeds is not None:
        expand(cfg)  # every run of the matrix is a valid config, or the load fails naming the axis
    check_decoding(cfg)
    _choice(cfg.env.name, ENVS, "env.name")
    seeds = cfg.canary.seeds
    if (not isinstance(seeds, list) or not seeds or len(seeds) > 64
            or not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**31 for x in seeds)
            or len(set(seeds)) != len(seeds)):
        raise ConfigError(f"canary.seeds: 1 to 64 distinct integer seeds from 0, got {seeds!r}")
    _choice(cfg.canary.split, CANARY_SPLITS, "canary.split")
    check_servers(cfg)
    if not isinstance(cfg.compute.stop_on, list):
        raise ConfigError(f"compute.stop_on: a list of alarms ({', '.join(STOP_ON)}), got {cfg.compute.stop_on!r}")
    for kind in cfg.compute.stop_on:
        _choice(kind, STOP_ON, "compute.stop_on")
    _choice(cfg.env.split, SPLITS, "env.split")
    _choice(cfg.env.train_split, SPLITS, "env.train_split")
    _choice(cfg.env.data, ("generated", "official"), "env.data")
    _choice(cfg.executor.backend, BACKENDS, "executor.backend")
    _choice(cfg.curator.backend, BACKENDS, "curator.backend")
    _choice(cfg.curator.tools, CURATOR_TOOLS, "curator.tools")
    _choice(cfg.optimize.optimizer.backend, BACKENDS, "optimize.optimizer.backend")
    _choice(cfg.optimize.gate.mode, GATE_MODES, "optimize.gate.mode")
    _choice(cfg.optimize.schedule, SCHEDULES, "optimize.schedule")
    _choice(cfg.optimize.validation_split, SPLITS, "optimize.validation_split")
    o = cfg.optimize
    _choice(o.target, OPTIMIZE_TARGETS, "optimize.target")
    for key in ("epochs", "minibatch_size", "max_lines", "min_lines", "n_validation"):
        if getattr(o, key) is not None and getattr(o, key) < 1:
            raise ConfigError(f"optimize.{key}: at least 1, got {getattr(o, key)}")
    if o.min_lines is not None and o.min_lines > o.max_lines:
        raise ConfigError(f"optimize.min_lines ({o.min_lines}) is above optimize.max_lines ({o.max_lines})")
    if o.document is not None and o.target != "document":
        raise ConfigError("optimize.document: set only with optimize.target: document")
    _choice(cfg.retrieval.mode, RETRIEVAL_MODES, "retrieval.mode")
    t = cfg.training
    _choice(t.grouping, GROUPINGS, "training.grouping")
    _choice(t.curriculum, CURRICULA, "training.curriculum")
    if t.max_turn_tokens and t.max_completion_length and t.max_turn_tokens > t.max_completion_length:
        raise ConfigError(f"training.max_turn_tokens ({t.max_turn_tokens}) is above training.max_completion_length "
                          f"({t.max_completion_length}), which caps the whole rollout: one turn cannot use more")
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
    low, high = cfg.env.reasoning.min_group_size, cfg.training.group_size
    if low is not None and high is not None and low > high:
        raise ConfigError(f"env.reasoning.min_group_size: {low} is above training.group_size {high} (|G| is drawn "
                          "from min_group_size to group_size)")
    if cfg.training.rollout_concurrency is not None and cfg.training.rollout_concurrency < 1:
        raise ConfigError(f"training.rollout_concurrency: at least 1 (or unset: every rollout of the step), "
                          f"got {cfg.training.rollout_concurrency}")
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


STOP_ON = ("stall", "device-idle")  # watchdog alarms that may stop a launch (compute.stop_on)
STOP_GRACE_S = 30.0  # after the watchdog's SIGTERM, a stopped launch's time to save before SIGKILL
VLLM_UTILIZATION = 0.9  # vLLM's (and `trl vllm-serve`'s) default gpu_memory_utilization
VLLM_MAX_SEQS = 256  # vLLM's max_num_seqs default: requests one engine runs at once
SERVED_ROLES = ("executor", "judge")  # sections a launch may serve from GPUs of its own (compute.servers)
SERVER_KEYS = {"gpus": (1, 1024), "tensor_parallel_size": (1, 1024), "gpu_memory_utilization": (0.01, 1.0),
               "max_model_len": (1, 1 << 22), "max_num_seqs": (1, 1 << 20)}


def check_servers(cfg: Config) -> None:
    """compute.servers: known roles, each a mapping of known keys within their bounds (whether the
    role's backend reaches its server is gate 7's memory check)."""
    servers = cfg.compute.servers
    if not isinstance(servers, dict):
        raise ConfigError(f"compute.servers: a mapping of role to server, e.g. {{executor: {{gpus: 1}}}}, got {servers!r}")
    for role, spec in servers.items():
        where = f"compute.servers.{role}"
        _choice(role, SERVED_ROLES, "compute.servers role")
        if not isinstance(spec, dict):
            raise ConfigError(f"{where}: a mapping such as {{gpus: 1}}, got {spec!r}")
        for key, value in spec.items():
            if key not in SERVER_KEYS:
                raise ConfigError(f"{where}.{key}: unknown key{did_you_mean(key, list(SERVER_KEYS))}")
            low, high = SERVER_KEYS[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high \
                    or (isinstance(low, int) and not isinstance(value, int)):
                raise ConfigError(f"{where}.{key}: a number from {low} to {high}, got {value!r}")


def relative_to_config(cfg: Config, path: str | Path) -> Path:
    """A path a config names: relative paths resolve beside the config file it was loaded from."""
    p = Path(path)
    return Path(cfg.source).parent / p if not p.is_absolute() and cfg.source is not None else p


def training_output_dir(cfg: Config) -> Path:
    """Where training writes checkpoints: training.output_dir, else checkpoints/EXPERIMENT (derived
    here only: the trainer, the launch plan and the disk check all read it from this function)."""
    return Path(cfg.training.output_dir or f"checkpoints/{cfg.experiment.name}")


# The batch's derived values, computed here only (TRL computes its own the same way in
# GRPOConfig.__post_init__): the trainer's dataset size, the dry-run's group count, the step plan
# and the batch gate all read these.
def completions_per_step(cfg: Config) -> int | None:
    """Completions one optimizer step consumes, the effective batch: per-device batch x gradient
    accumulation x processes (TRL counts completions in the per-device batch); None when either
    is not set."""
    t = cfg.training
    if t.per_device_train_batch_size is None or t.gradient_accumulation_steps is None:
        return None
    return t.per_device_train_batch_size * t.gradient_accumulation_steps * cfg.compute.num_processes


def groups_per_step(cfg: Config) -> int | float | None:
    """GRPO groups (dataset rows) one optimizer step consumes: completions / num_generations; an
    int when it divides (TRL requires that), None when either is unset."""
    done, g = completions_per_step(cfg), cfg.training.num_generations
    if done is None or not g:
        return None
    return done // g if done % g == 0 else done / g


def url_port(url: str | None) -> str | None:
    """The port an http(s) address names (`http://HOST:PORT/v1` -> "PORT"); None when it names none."""
    host = (url or "").split("://", 1)[-1].split("/", 1)[0]
    return host.rsplit(":", 1)[1] if ":" in host else None


def server_specs(cfg: Config) -> dict:
    """compute.servers with every default filled in, by role in order: gpus (1), tensor_parallel_size
    (its gpus), data_parallel_size, gpu_memory_utilization (vLLM's 0.9), max_model_len (None: the
    model's), max_num_seqs (vLLM's 256), the GPU ids it takes (after `trl vllm-serve`'s) and the port
    of its role's base_url (None when it names none). The memory plan, the launch's `vllm serve`
    commands and the GPU counts all read this."""
    first, out = cfg.compute.vllm_server_gpus, {}
    for role, spec in sorted((cfg.compute.servers or {}).items()):
        gpus = int(spec.get("gpus", 1))
        tp = int(spec.get("tensor_parallel_size", gpus))
        port = url_port(getattr(cfg, role).base_url)
        out[role] = {"gpus": gpus, "tensor_parallel_size": tp, "data_parallel_size": max(1, gpus // tp),
                     "gpu_memory_utilization": float(spec.get("gpu_memory_utilization", VLLM_UTILIZATION)),
                     "max_model_len": spec.get("max_model_len"),
                     "max_num_seqs": int(spec.get("max_num_seqs", VLLM_MAX_SEQS)),
                     "gpu_ids": list(range(first, first + gpus)),
                     "port": int(port) if port and port.isdigit() else None}
        first += gpus
    return out


def server_gpus(cfg: Config) -> int:
    """GPUs per machine that serve (`trl vllm-serve` and compute.servers), before the training
    processes' (training/launch.py gives training the GPUs after them)."""
    return cfg.compute.vllm_server_gpus + sum(s["gpus"] for s in server_specs(cfg).values())


def rollouts_per_generation(cfg: Config) -> int | None:
    """Rollouts generated, and played, together: training.generation_batch_size, else TRL's
    default, one optimizer step's completions."""
    return cfg.training.generation_batch_size or completions_per_step(cfg)


def static_repo_path(cfg: Config, arm: str) -> str | None:
    """The fixed skill folder an arm plays with (static_repo, repo:NAME), resolved beside the
    config file, else None."""
    if arm == "static_repo":
        folder = cfg.eval.static_repo
    elif arm.startswith("repo:"):
        folder = cfg.eval.static_repos[arm[5:]]
    else:
        return None
    return str(relative_to_config(cfg, Path(folder).expanduser())) if folder else None


def curator_config(cfg: Config, arm: str) -> CuratorConfig:
    """The curator an arm learns with: `curator:NAME` arms swap in their checkpoint as the model
    (on a local backend: hf unless the config says vllm); under `sweep.serve: adapters` the
    openai backend at the sweep's adapter server, asking for adapter NAME (training/serve_adapters.py).
    Other learning arms use `curator`."""
    if not arm.startswith("curator:"):
        return cfg.curator
    if cfg.sweep.serve == "adapters":
        return dataclasses.replace(cfg.curator, backend="openai", model=arm[8:], api_key_env=ADAPTER_KEY_ENV,
                                   base_url=f"http://127.0.0.1:{cfg.sweep.port}/v1")
    backend = cfg.curator.backend if cfg.curator.backend in registry.LOCAL_BACKENDS else registry.DEFAULT_LOCAL
    return dataclasses.replace(cfg.curator, backend=backend, model=checkpoint_of(cfg, arm))


# the key the sweep's adapter server is started with (a fresh token per sweep, never written)
ADAPTER_KEY_ENV = "SKILLOS_ADAPTER_SERVER_KEY"


def checkpoint_of(cfg: Config, arm: str) -> str:
    """A `curator:NAME` arm's checkpoint (a local one resolved beside the config, like every path)."""
    model = cfg.eval.curators[arm[8:]]
    if looks_like_path(model):
        model = str(relative_to_config(cfg, Path(model).expanduser()))
    return model


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
    import itertools

    axes = _matrix_axes(cfg)
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
            label = "_".join([f"{name}-{_label(value)}" for name, _, value in combo] +
                             ([f"seed-{seed}"] if seed is not None else []))
            try:
                child = from_dict(apply_sets(base.to_dict(), sets))
            except ConfigError as exc:
                raise ConfigError(f"matrix run {label}: {exc}") from None
            child.source, child.declared, child.family = cfg.source, cfg.declared, (parent, label, plan)
            runs.append(Run(label, {name: value for name, _, value in combo}, seed, child))
    if len({r.label for r in runs}) != len(runs):
        raise ConfigError("matrix: two runs get the same folder name; give the values distinct names")
    return runs


def _matrix_axes(cfg: Config) -> list[tuple]:
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


def _label(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return re.sub(r"[^A-Za-z0-9.+-]+", "-", text).strip("-")[:40] or "x"


def from_dict(data: Any, where: str = "") -> Config:
    return _protect(validate(_build(Config, data, where)))


def _protect(cfg: Config) -> Config:
    """The key variables the config names: their values are redacted from all output."""
    from skillos.secrets import protect_key_vars

    sections = [cfg.executor, cfg.curator, cfg.judge, cfg.optimize.optimizer]
    protect_key_vars(s.api_key_env for s in sections)
    protect_key_vars(registry.default_key_env(s.backend) for s in sections)
    return cfg


def parse_set(item: str) -> tuple[list[str], Any]:
    """`--set KEY=VALUE`: a dotted key and a YAML value (`eval.alpha=0.01`, `eval.arms=[a, b]`),
    parsed with the bounds of a config file: its size, aliases, expanded nodes, nesting and
    duplicated keys (skillos.safety.load_yaml)."""
    from skillos import safety
    from skillos.errors import SkillosError

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
    from skillos import safety

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


def revalidate(cfg: "Config") -> "Config":
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


# the config's sections (dataclass fields of Config): `--set SECTION=null` would reset one whole
SECTIONS = tuple(f.name for f in dataclasses.fields(Config) if dataclasses.is_dataclass(f.default_factory))


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


def with_sets(cfg: Config, sets) -> Config:
    """A copy of `cfg` with `KEY=VALUE` overrides, validated as if the file had said so."""
    if not sets:
        return cfg
    new = from_dict(apply_sets(cfg.to_dict(), sets))
    new.source, new.declared, new.family = cfg.source, cfg.declared, cfg.family
    return new


def load(path: str | Path, sets=()) -> Config:
    """A config file; `sets` are KEY=VALUE overrides applied before validation (`--set`)."""
    from skillos import safety
    from skillos.errors import SkillosError

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
        cfg = _build(Config, data, "")
        cfg.source = path  # named inputs resolve beside the config file
        cfg.declared = frozenset(data)
        _protect(validate(cfg))
        check_inputs(cfg)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return cfg


# -- bounds and named inputs, checked at load ---------------------------------------------
DREAM_FRAMINGS = 6  # the rewordings training/sleep/dream.py has: a task gets at most this many dreams
# (key, low, high): every number a config sets is finite and inside these, or the load fails
# with the bound in the message. Wide enough for the paper's settings; narrow enough that a typo
# (1e9 games, a 2**80 seed) is an error instead of a full disk, a hang or an overflow.
BOUNDS = [
    ("experiment.expected_effect", 1e-6, 1.0), ("experiment.expected_discordance", 1e-6, 1.0),
    ("experiment.fixes_failure", 1, 2**62), ("experiment.before_run", 1, 2**62),
    ("env.n_games", 1, 10_000), ("env.n_train_games", 0, 200_000), ("env.max_steps", 1, 1_000),
    ("env.seed", 0, 2**31 - 1),
    ("retrieval.top_k", 0, 100),
    ("eval.alpha", 1e-9, 0.999), ("eval.power", 0.01, 0.9999),
    ("eval.bootstrap", 100, 1_000_000), ("eval.workers", 0, 256), ("eval.concurrency", 1, 1024),
    ("eval.wave_size", 1, 10_000), ("eval.control.max_age_days", 0.0, 36_500.0),
    ("sweep.max_loras", 1, 4096), ("sweep.max_lora_rank", 1, 4096), ("sweep.port", 1, 65_535),
    ("reward.lambda_fc", -100.0, 100.0), ("reward.lambda_cnt", -100.0, 100.0),
    ("reward.lambda_comp", -100.0, 100.0),
    ("compute.num_processes", 1, 4096), ("compute.step_minutes", 1e-6, 1e6),
    ("compute.max_checkpoint_gap_minutes", 1e-3, 1e6), ("compute.stall_minutes", 1e-3, 1e6),
    ("compute.ray_max_retries", 0, 100), ("compute.ray_gpus_per_task", 0.0, 64.0),
    ("compute.num_machines", 1, 4096), ("compute.machine_rank", 0, 4095), ("compute.vllm_server_gpus", 0, 4096),
    ("compute.executor_latency_s", 0.0, 86_400.0),
    ("compute.gpu_seconds_per_step", 1e-6, 1e9),
    ("optimize.epochs", 1, 1_000), ("optimize.minibatch_size", 1, 10_000),
    ("optimize.max_lines", 1, 100_000), ("optimize.min_lines", 1, 100_000),
    ("optimize.n_validation", 1, 10_000), ("optimize.gate.k", 0.0, 100.0),
    ("optimize.gate.max_unmeasured", 0.0, 1.0),
    ("training.learning_rate", 1e-12, 1.0), ("training.per_device_train_batch_size", 1, 65_536),
    ("training.gradient_accumulation_steps", 1, 65_536), ("training.beta", 0.0, 1e3),
    ("training.num_generations", 1, 4096), ("training.generation_batch_size", 1, 1 << 20),
    ("training.temperature", 0.0, 10.0), ("training.max_steps", 1, 10_000_000),
    ("training.group_size", 1, 1_000), ("training.max_completion_length", 1, 1 << 22),
    ("training.max_turn_tokens", 1, 1 << 22),
    ("training.max_prompt_length", 1, 1 << 22), ("training.save_steps", 1, 10_000_000),
    ("training.save_total_limit", 1, 1_000_000), ("training.seed", 0, 2**31 - 1),
    ("training.vllm_gpu_memory_utilization", 0.01, 1.0),
    ("training.vllm_tensor_parallel_size", 1, 1024), ("training.checkpoint_gb", 1e-6, 1e9),
    ("training.max_signal_free_steps", 1, 10_000_000),
    ("sleep.dream_factor", 0, DREAM_FRAMINGS),
    ("canary.warmup_steps", 1, 1_000_000), ("canary.warmup_groups", 1, 100_000),
    ("canary.warmup_learning_rate", 1e-12, 1.0), ("canary.sealed_seed", 0, 2**31 - 1),
]
BACKEND_BOUNDS = [  # for executor, curator, judge and optimize.optimizer
    ("temperature", 0.0, 10.0), ("top_p", 1e-9, 1.0), ("top_k", 1, 100_000),
    ("max_tokens", 1, 1 << 22), ("history_length", 0, 10_000), ("timeout_s", 0.001, 86_400.0),
    ("max_retries", 0, 100),
]
BACKEND_SECTIONS = ("executor", "curator", "judge", "optimize.optimizer")
EXPERIMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
GPU_SPEC = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}(:[1-9][0-9]{0,3})?")  # TYPE[:N], N >= 1
MAX_GPUS_PER_MACHINE = 64
RAY_ADDRESS = re.compile(r"auto|(ray://)?([A-Za-z0-9][A-Za-z0-9.-]{0,252}|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}")


def _get(cfg, dotted: str):
    for part in dotted.split("."):
        cfg = getattr(cfg, part)
    return cfg


def check_bounds(cfg: Config) -> None:
    """Every numeric key finite and within its bound; names that become paths are plain names."""
    bounds = BOUNDS + [(f"{s}.{k}", lo, hi) for s in BACKEND_SECTIONS for k, lo, hi in BACKEND_BOUNDS]
    for key, low, high in bounds:
        value = _get(cfg, key)
        if value is None or isinstance(value, bool):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{key}: must be a finite number, got {value}")
        if not low <= value <= high:
            raise ConfigError(f"{key}: must be between {low:g} and {high:g}, got {value:g}"
                              if isinstance(value, float) or isinstance(low, float)
                              else f"{key}: must be between {low} and {high}, got {value}")
    address = cfg.compute.ray_address
    if address is not None and (not isinstance(address, str) or not RAY_ADDRESS.fullmatch(address)):
        raise ConfigError(f"compute.ray_address: {str(address)[:60]!r}: expected auto, HOST:PORT or ray://HOST:PORT "
                          "(unset: a local cluster started for the run)")
    gpu = cfg.compute.gpu
    if gpu is not None and (not isinstance(gpu, str) or not GPU_SPEC.fullmatch(gpu)
                            or int(gpu.partition(":")[2] or 1) > MAX_GPUS_PER_MACHINE):
        raise ConfigError(f"compute.gpu: {str(gpu)[:60]!r}: expected TYPE or TYPE:N with N GPUs per machine, 1 or more "
                          f"and at most {MAX_GPUS_PER_MACHINE} (e.g. H100:8); a launch on the CPU leaves it unset")
    if not isinstance(cfg.experiment.name, str) or not EXPERIMENT_NAME.fullmatch(cfg.experiment.name):
        raise ConfigError(f"experiment.name: {str(cfg.experiment.name)[:60]!r} must be 1-100 letters, digits, "
                          "'.', '_' or '-', starting with a letter or digit (it becomes a folder name)")
    for key in ("eval.output_dir", "training.output_dir"):
        value = _get(cfg, key)
        if value is not None and (not value.strip() or "\0" in value):
            raise ConfigError(f"{key}: must be a folder path, got {value!r}")


def looks_like_path(value: str) -> bool:
    """A model name that is a local path (./ckpt, /abs, ~/x) rather than a hub id (org/name)."""
    return value.startswith((".", "/", "~"))


def check_inputs(cfg: Config) -> None:
    """Every input folder or file a config names exists, resolved beside the config file: a
    missing static repo must not play as an empty one. Outputs (output_dir) may not exist yet."""
    def need(key: str, value: str | None, kind: str, beside_config: bool = True) -> None:
        if value is None:
            return
        p = Path(value).expanduser()
        p = relative_to_config(cfg, p) if beside_config else p
        if kind == "folder" and not p.is_dir():
            raise ConfigError(f"{key}: {value!r} is {'a file' if p.exists() else 'missing'}; it must be "
                              f"a folder (looked for {p})")
        if kind == "file" and not p.is_file():
            raise ConfigError(f"{key}: {value!r} is {'a folder' if p.is_dir() else 'missing'}; it must be "
                              f"a file (looked for {p})")

    if any(arm == "static_repo" for arm in cfg.eval.arms):
        need("eval.static_repo", cfg.eval.static_repo, "folder")
    for name, folder in cfg.eval.static_repos.items():
        if not isinstance(folder, str):
            raise ConfigError(f"eval.static_repos.{name}: expected a folder path, got {folder!r}")
        if f"repo:{name}" in cfg.eval.arms:
            need(f"eval.static_repos.{name}", folder, "folder")
    for name, checkpoint in cfg.eval.curators.items():
        if not isinstance(checkpoint, str):
            raise ConfigError(f"eval.curators.{name}: expected a checkpoint path or model id, got {checkpoint!r}")
        if f"curator:{name}" in cfg.eval.arms and looks_like_path(checkpoint):
            need(f"eval.curators.{name}", checkpoint, "folder")
    need("optimize.seed_skills", cfg.optimize.seed_skills, "folder")
    need("optimize.meta_skill", cfg.optimize.meta_skill, "file")
    need("compute.deepspeed_config", cfg.compute.deepspeed_config, "file")
    # Checkpoints and local model folders are read where they are used, from the working
    # directory (they live under an output folder); they must exist all the same.
    need("training.resume_from_checkpoint", cfg.training.resume_from_checkpoint, "folder", False)
    for key in ("executor.model", "curator.model", "judge.model", "optimize.optimizer.model",
                "training.model"):
        value = _get(cfg, key)
        if isinstance(value, str) and looks_like_path(value):
            need(key, value, "folder", False)
    for key in ("eval.output_dir", "training.output_dir"):  # outputs: relative to the cwd
        value = _get(cfg, key)
        if value is not None and Path(value).expanduser().is_file():
            raise ConfigError(f"{key}: {value!r} is a file; an output folder is needed")
