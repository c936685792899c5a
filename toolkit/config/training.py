"""training and reward: GRPO settings under TRL's names, and the curator's reward weights."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from skillos.errors import ConfigError
from skillos.config.fields import default_of

REPORT_TO = ("tensorboard", "trackio", "wandb", "none")  # TRL / transformers logging integrations
GROUPINGS = ("task_type", "natural")  # how a curator rollout's tasks are drawn (training/curator/groups.py)
CURRICULA = ("none", "easy_first", "interleaved")  # the order of the groups (training/curator/groups.py)


@dataclass
class RewardConfig:  # r = r_task + lambda_fc*r_fc + lambda_cnt*r_cnt + lambda_comp*r_comp
    lambda_fc: float = field(default=1.0, metadata={"bounds": (-100.0, 100.0), 
        "help": "curator reward weight of r_fc, the share of the curator's operations that were valid "
                "(r = r_task + lambda_fc*r_fc + lambda_cnt*r_cnt + lambda_comp*r_comp)"})
    lambda_cnt: float = field(default=0.1, metadata={"bounds": (-100.0, 100.0), 
        "help": "curator reward weight of r_cnt, the share of the curator's skills the judge approved (needs a judge "
                "when not 0)"})
    lambda_comp: float = field(default=0.05, metadata={"bounds": (-100.0, 100.0), 
        "help": "curator reward weight of r_comp, compression: 1 - repo words / input words (floored at 0)"})


@dataclass
class TrainingConfig:
    """GRPO settings, TRL's names. None = not set; a training config must set them (gate 1)."""
    model: str | None = field(default=None, metadata={
        "help": "the model trained: a hub id or a local checkpoint folder (./ckpt, /abs, ~/x)"})
    output_dir: str | None = field(default=None, metadata={
        "help": "where checkpoints and step logs go; None: checkpoints/EXPERIMENT (config.training_output_dir)"})
    learning_rate: float | None = field(default=None, metadata={"bounds": (1e-12, 1.0), "help": "TRL GRPOConfig.learning_rate"})
    per_device_train_batch_size: int | None = field(default=None, metadata={"bounds": (1, 65_536), 
        "help": "TRL GRPOConfig.per_device_train_batch_size: completions per device per micro-batch"})
    gradient_accumulation_steps: int | None = field(default=None, metadata={"bounds": (1, 65_536), 
        "help": "TRL GRPOConfig.gradient_accumulation_steps: micro-batches per optimizer step (effective batch: "
                "per_device_train_batch_size x this x compute.num_processes completions)"})
    beta: float | None = field(default=None, metadata={"bounds": (0.0, 1e3), "help": "TRL GRPOConfig.beta: the KL coefficient"})
    num_generations: int | None = field(default=None, metadata={"bounds": (1, 4096), 
        "help": "TRL GRPOConfig.num_generations: completions per prompt, one GRPO group; it must divide the "
                "effective batch"})
    generation_batch_size: int | None = field(default=None, metadata={"bounds": (1, 1 << 20), 
        "help": "TRL GRPOConfig.generation_batch_size: rollouts generated and played together; None: one "
                "optimizer step's completions (TRL's default)"})
    temperature: float | None = field(default=None, metadata={"bounds": (0.0, 10.0), 
        "help": "TRL GRPOConfig.temperature: sampling temperature of the trained model's rollouts"})
    max_steps: int | None = field(default=None, metadata={"bounds": (1, 10_000_000), "help": "TRL GRPOConfig.max_steps: optimizer steps"})
    group_size: int | None = field(default=None, metadata={"bounds": (1, 1_000), "help": "tasks per curator rollout, |G|"})
    grouping: str = field(default="task_type", metadata={"choices": GROUPINGS, 
        "help": "how a rollout's |G| tasks are drawn (training/curator/groups.py): task_type (the method's stream: one type "
                "per group, related tasks) | natural (the natural-distribution ablation: the whole pool, types as "
                "they come)"})
    curriculum: str = field(default="none", metadata={"choices": CURRICULA, 
        "help": "the order of the groups: none (TRL shuffles them) | easy_first (the curriculum ablation: shortest "
                "expert walkthrough first, unshuffled) | interleaved (as drawn, task types taking turns, unshuffled: "
                "a step of as many prompts as types holds one group of each; grouping task_type only)"})
    max_instructions: int | None = field(default=None, metadata={"bounds": (1, 1_000), 
        "help": "the most procedures (household: heat, cool, clean, look) the skill repo of a curator rollout may "
                "tell the executor, as its environment reads them; a write past it is refused and changes nothing. "
                "None: no bound. The curator canary's miniature holds one, so no one skill is right for both its "
                "task types"})
    max_completion_length: int | None = field(default=None, metadata={"bounds": (1, 1 << 22), 
        "help": "TRL GRPOConfig.max_completion_length: TRL caps the whole multi-turn rollout with it"})
    max_turn_tokens: int | None = field(default=None, metadata={"bounds": (1, 1 << 22), 
        "help": "tokens one response (one turn of a multi-turn rollout) may generate, the paper's per-response "
                "cap (4096); passed to generation as max_new_tokens (max_tokens under vLLM) while "
                "max_completion_length still caps the whole rollout; None: a turn may use all that is left of it"})
    max_prompt_length: int | None = field(default=None, metadata={"bounds": (1, 1 << 22), 
        "help": "prompt tokens kept (training/common/prompt_cap.py cuts longer prompts; TRL's GRPOConfig has none)"})
    save_steps: int | None = field(default=None, metadata={"bounds": (1, 10_000_000), 
        "help": "TRL GRPOConfig.save_steps: optimizer steps between checkpoints"})
    save_total_limit: int | None = field(default=None, metadata={"bounds": (1, 1_000_000), 
        "help": "TRL GRPOConfig.save_total_limit: checkpoints kept; None keeps every checkpoint"})
    loss_type: str | None = field(default=None, metadata={"help": "TRL GRPOConfig.loss_type (grpo, dr_grpo, ...)"})
    lr_scheduler_type: str | None = field(default=None, metadata={"help": "TRL GRPOConfig.lr_scheduler_type"})
    weight_decay: float | None = field(default=None, metadata={"bounds": (0.0, 10.0),
        "help": "TRL GRPOConfig.weight_decay: AdamW's decoupled weight decay; None: TRL's 0"})
    max_grad_norm: float | None = field(default=None, metadata={"bounds": (0.0, 1e9),
        "help": "TRL GRPOConfig.max_grad_norm: gradients clipped to this norm; 0: not clipped; None: TRL's 1"})
    top_k: int | None = field(default=None, metadata={"bounds": (0, 1 << 22),
        "help": "TRL GRPOConfig.top_k: rollouts sample from the k likeliest tokens; 0: the whole vocabulary "
                "(None: TRL's 0, where transformers' generate alone keeps 50)"})
    seed: int | None = field(default=None, metadata={"bounds": (0, 2**31 - 1), 
        "help": "TRL GRPOConfig.seed; experiment.seeds sets it per run when the config trains"})
    gradient_checkpointing: bool | None = field(default=None, metadata={
        "help": "TRL GRPOConfig.gradient_checkpointing"})
    bf16: bool | None = field(default=None, metadata={"help": "TRL GRPOConfig.bf16: bfloat16 mixed precision"})
    use_vllm: bool | None = field(default=None, metadata={
        "help": "TRL GRPOConfig.use_vllm: generation through vLLM (GPU): colocate shares the training GPUs"})
    vllm_mode: str | None = field(default=None, metadata={"help": "TRL GRPOConfig.vllm_mode: colocate | server"})
    vllm_gpu_memory_utilization: float | None = field(default=None, metadata={"bounds": (0.01, 1.0), 
        "help": "TRL GRPOConfig.vllm_gpu_memory_utilization: share of GPU memory vLLM may take"})
    vllm_tensor_parallel_size: int | None = field(default=None, metadata={"bounds": (1, 1024), 
        "help": "TRL GRPOConfig.vllm_tensor_parallel_size: GPUs one vLLM model is split over"})
    resume_from_checkpoint: str | None = field(default=None, metadata={
        "help": "a complete checkpoint folder to resume from; None: the newest complete one under output_dir, "
                "if any"})
    checkpoint_gb: float | None = field(default=None, metadata={"bounds": (1e-6, 1e9), 
        "help": "size of one checkpoint in GB, for the free-disk check"})
    lora: dict | None = field(default=None, metadata={"help": "peft LoraConfig fields; None: full fine-tuning"})
    rollout_concurrency: int | None = field(default=None, metadata={"bounds": (1, 1 << 20), 
        "help": "rollouts whose executor games play at once during a step (training/curator/rollouts.py); None: every "
                "rollout of the step; 1: TRL's own one-at-a-time loop"})
    async_rollouts: bool = field(default=False, metadata={
        "help": "play the next generation batch's rollouts while this step trains (training/curator/async_rollouts.py): "
                "generated by a copy of the policy one optimizer step old, its loss ratio taken against that copy's "
                "log-probabilities; off: on-policy, as the paper trains. Needs training.max_staleness (gate 1), one "
                "process and no vLLM"})
    max_staleness: int | None = field(default=None, metadata={"bounds": (1, 1_000_000),
        "help": "with async_rollouts: the most optimizer steps the policy that generated a rollout may lag the "
                "step that trains on it (TRL's name); a batch past it is discarded and generated again on-policy. "
                "skillos plays one generation batch ahead, which is as stale as the optimizer steps a generation "
                "serves: 1 unless generation_batch_size spans several steps"})
    vllm_server_base_url: str | None = field(default=None, metadata={
        "help": "vllm_mode server: where `trl vllm-serve` listens"})
    format_warmup_steps: int | None = field(default=None, metadata={
        "help": "supervised steps on well-formed curator tool calls before GRPO (training/common/warmup.py): a model "
                "that never writes a call gives GRPO nothing to compare; None: 240 for tiny-qwen2, none for "
                "any other model; 0: none"})
    format_warmup_learning_rate: float | None = field(default=None, metadata={
        "help": "learning rate of the format warm-up (full fine-tuning, AdamW); None: 3e-3, the tiny model's"})
    max_signal_free_steps: int | None = field(default=10, metadata={"bounds": (1, 10_000_000), 
        "help": "a launch on GPUs aborts after this many consecutive steps with no learning signal (every "
                "group's rewards alike, or a zero gradient: TRL's frac_reward_zero_std 1 or grad_norm 0), "
                "recorded in the ledger; every run prints 'N of M steps had no learning signal' either way; "
                "None: never abort"})
    report_to: str | list = field(default="tensorboard", metadata={"choices": REPORT_TO, 
        "help": "where the step logs go (TRL's integrations): tensorboard (event files under "
                "OUTPUT_DIR/runs/, read by `tensorboard --logdir OUTPUT_DIR`), trackio, wandb, or none; "
                "a list for several. Nothing leaves the machine unless a remote one is named."})

    def is_set(self) -> bool:
        """Whether the config trains: any field set away from its default."""
        return any(getattr(self, f.name) != default_of(f) for f in dataclasses.fields(self))

    def reporters(self) -> list:
        """`report_to` as a list (it may be one name or several)."""
        return [self.report_to] if isinstance(self.report_to, str) else list(self.report_to or [])

    def rules(self, where: str) -> None:
        names = self.reporters()
        if len(set(names)) != len(names):
            raise ConfigError(f"{where}.report_to: {names} names one integration twice")
        if "none" in names and len(names) > 1:  # transformers refuses it when the trainer starts
            raise ConfigError(f"{where}.report_to: {names}: 'none' cannot stand beside other integrations; "
                              "write none alone, or list only the ones to use")
        if self.max_staleness is not None and not self.async_rollouts:
            raise ConfigError(f"{where}.max_staleness ({self.max_staleness}) bounds asynchronous rollouts, and "
                              f"{where}.async_rollouts is off: set it true, or remove max_staleness")
        if self.curriculum == "interleaved" and self.grouping != "task_type":
            raise ConfigError(f"{where}.curriculum interleaved takes task types in turns, and {where}.grouping "
                              f"{self.grouping} draws groups of mixed types: use grouping task_type, or curriculum none")
        turn, rollout = self.max_turn_tokens, self.max_completion_length
        if turn and rollout and turn > rollout:
            raise ConfigError(f"{where}.max_turn_tokens ({turn}) is above {where}.max_completion_length ({rollout}), "
                              "which caps the whole rollout: one turn cannot use more")
