"""sweep: how `skillos sweep` serves its checkpoint arms (training/common/serve_adapters.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

SWEEP_SERVE = ("local", "adapters")



@dataclass
class SweepConfig:
    """How `skillos sweep` serves its checkpoint arms (training/common/serve_adapters.py)."""
    serve: str = field(default="local", metadata={"choices": SWEEP_SERVE, 
        "help": "local: each curator:NAME arm loads its checkpoint in its own process (curator.backend hf "
                "or vllm); adapters: one `vllm serve BASE --enable-lora` serves every LoRA checkpoint as an "
                "adapter named after its arm, and each arm's curator calls its own adapter (the request's "
                "model field) concurrently. GPU only; `skillos sweep --dry-run` prints the plan"})
    base_model: str | None = field(default=None, metadata={
        "help": "adapters: the base model the server loads; None: the one every checkpoint's "
                "adapter_config.json names (they must agree)"})
    max_loras: int | None = field(default=None, metadata={"bounds": (1, 4096), 
        "help": "adapters: vLLM --max-loras (adapters resident at once); None: one per checkpoint arm. "
                "Fewer than the arms is refused: concurrent arms would evict each other's adapters"})
    max_lora_rank: int | None = field(default=None, metadata={"bounds": (1, 4096), 
        "help": "adapters: vLLM --max-lora-rank; None: the largest checkpoint r, rounded up to a rank vLLM takes"})
    port: int = field(default=8000, metadata={"bounds": (1, 65_535), "help": "adapters: the port the server listens on, on 127.0.0.1"})
