"""skillgate: the executor learns which skill of a slate to read (SkillGate)."""

from __future__ import annotations

from dataclasses import dataclass, field

from skillos import registry
from skillos.errors import ConfigError
from skillos.config.backend import BackendConfig

# SkillGate's training profiles (training/selector/credit.py says what each does to the loss).
SELECTOR_CREDITS = ("no_skill", "mixed_task_reward", "mixed_separated", "hybrid_slate", "task-mask-only",
                    "first-oracle", "clean-oracle")
SELECTOR_INITS = ("base", "sft", "gold-bc", "oracle-grpo")  # where selector GRPO starts (training/selector/sft.py)


@dataclass
class SkillGateConfig:
    """SkillGate: the executor learns which skill of a slate to read (evals/envs/slate/slates.py,
    training/selector/trainer.py). `trainer` is what `skillos train` runs (training/registry.py).
    A slate holds `slate_size` skills: the oracle, `n_misleading` built from it, `n_irrelevant`,
    and relevant ones for the rest (`n_relevant`)."""
    trainer: str = field(default="curator", metadata={"choices": registry.TRAINERS, 
        "help": f"what skillos train runs (skillos/registry.py TRAINERS): {registry.TRAINERS.listed()}"})
    slate_repo: str | None = field(default=None, metadata={
        "help": "skill folder slates are drawn from (relative to the config)"})
    slate_size: int = field(default=16, metadata={"bounds": (1, 1_000), "help": "skills in one slate (the method's slates: 16)"})
    n_misleading: int = field(default=5, metadata={"bounds": (0, 1_000), 
        "help": "mutated oracles per slate; DPO pairs each gold read with (up to 5 of) these"})
    n_irrelevant: int = field(default=5, metadata={"bounds": (0, 1_000), "help": "skills per slate unrelated to the task"})
    selector_credit: str | bool = field(default="mixed_task_reward", metadata={"choices": SELECTOR_CREDITS, 
        "help": "the selector's loss profile (training/selector/credit.py): no_skill | mixed_task_reward (outcome "
                "only; `off` is its old name) | mixed_separated | hybrid_slate | task-mask-only (coef exactly 0) | "
                "first-oracle | clean-oracle (the method)"})
    selector_coef: float = field(default=1.0, metadata={
        "help": "coef x the selector advantage on the selection tokens, for the credited profiles "
                "(training/selector/credit.py); task-mask-only needs exactly 0"})
    init: str = field(default="base", metadata={"choices": SELECTOR_INITS, 
        "help": "where selector GRPO starts: base | sft (SFT on a teacher's whole winning trajectories that read the oracle first) | gold-bc (SFT on the "
                "gold reads: the Gold-BC baseline as a start) | oracle-grpo (the method's: outcome GRPO with the "
                "oracle as the only skill shown, exported mid-training and merged)"})
    teacher: BackendConfig = field(default_factory=BackendConfig, metadata={"help": "init sft: any model backend"})
    sft_steps: int = field(default=60, metadata={"bounds": (1, 10_000_000), "help": "SFTTrainer steps of the sft / gold-bc start"})
    sft_learning_rate: float = field(default=1.0e-5, metadata={"bounds": (1e-12, 1.0), 
        "help": "learning rate of the sft / gold-bc start"})
    oracle_grpo_steps: int | None = field(default=None, metadata={"bounds": (1, 10_000_000), 
        "help": "init oracle-grpo: GRPO steps on oracle-only slates before the export; None: half of "
                "training.max_steps (the method exports its oracle-GRPO run mid-training)"})
    max_tool_calls: int = field(default=6, metadata={"bounds": (1, 1_000), "help": "reads + actions in one training rollout"})
    eval_spec: str | None = field(default=None, metadata={
        "help": "the frozen eval protocol (evals/protocol.py), relative to the config"})
    repeats: int = field(default=1, metadata={"bounds": (1, 1_000), "help": "plays of each held-out game per arm (pass@k / pass^k)"})

    @property
    def n_relevant(self) -> int:
        return self.slate_size - 1 - self.n_misleading - self.n_irrelevant

    def __post_init__(self):  # old names, read as what they meant or refused before any rule runs
        if self.selector_credit in (False, "off"):  # the old name; YAML 1.1 reads a bare `off` as False
            self.selector_credit = "mixed_task_reward"
        if self.init == "oracle-warmup":  # its meaning moved: never let an old config run the new recipe silently
            raise ConfigError("skillgate.init: oracle-warmup was SFT on the gold reads, now gold-bc; the method's start "
                              "(outcome GRPO with the oracle alone on the slate) is oracle-grpo: choose one")

    def rules(self, where: str) -> None:
        if self.n_relevant < 0:
            raise ConfigError(f"{where}.slate_size: {self.slate_size} cannot hold the oracle, n_misleading "
                              f"{self.n_misleading} and n_irrelevant {self.n_irrelevant}; raise it to at least "
                              f"{1 + self.n_misleading + self.n_irrelevant}")
        if self.init == "sft" and not registry.uses_model(self.teacher.backend):
            raise ConfigError(f"{where}.init: sft clones a teacher's trajectories, so {where}.teacher needs a "
                              "model backend (openai, anthropic, hf, vllm); gold-bc clones the gold reads")
