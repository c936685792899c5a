"""The model backend section, defined once: executor, curator, judge, optimize.optimizer, sleep.model,
sleep.optimizer and skillgate.teacher are each a BackendConfig (or a subclass adding its own keys).

What a backend cannot carry (a decoding setting it would drop, or the API would reject on every
call) is a rule in the backend's registry entry (`Backend.decoding`, skillos/registry.py), one of
the functions below: refused at load, before anything runs, never sent and lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from skillos import registry
from skillos.errors import ConfigError

CURATOR_TOOLS = ("paper", "curate_and_advance")
# reasoning_effort: `on` / `none` switch Qwen3-style thinking through the chat template (hf, vllm);
# `low` / `medium` / `high` (and `none`) are the API's field (openai) or a thinking budget (anthropic).
REASONING_EFFORTS = ("none", "on", "low", "medium", "high")
API_EFFORTS = ("low", "medium", "high")
ANTHROPIC_THINKING_BUDGET = {"low": 1024, "medium": 4096, "high": 16384}  # budget_tokens per effort


@dataclass
class BackendConfig:
    backend: str = field(default=registry.NO_MODEL, metadata={"choices": registry.BACKENDS, 
        "help": f"who answers (skillos/registry.py BACKENDS): {registry.BACKENDS.listed()}"})
    model: str | None = field(default=None, metadata={
        "help": "the model: an API model name, a hub id, or a local checkpoint folder (./ckpt, /abs, ~/x)"})
    base_url: str | None = field(default=None, metadata={
        "help": "an OpenAI-compatible endpoint (vllm serve, OpenRouter, ...)"})
    api_key_env: str | None = field(default=None, metadata={
        "help": "the environment variable holding the key (never the key); None: the backend's usual variable"})
    temperature: float | None = field(default=None, metadata={"bounds": (0.0, 10.0), 
        "help": "sampling temperature, sent to every backend's request or sampler; None: the server's default"})
    top_p: float | None = field(default=None, metadata={"bounds": (1e-9, 1.0), "help": "nucleus sampling; None: the server's default"})
    top_k: int | None = field(default=None, metadata={"bounds": (1, 100_000), 
        "help": "top-k sampling (vLLM, hf, Anthropic, OpenAI-compatible servers; the OpenAI API has none)"})
    reasoning_effort: str | bool | None = field(default=None, metadata={"choices": REASONING_EFFORTS, 
        "help": "hf/vllm: on | none (Qwen3-style enable_thinking through the chat template); "
                "openai: low | medium | high | none (the API's field); anthropic: low | medium | high "
                "(an extended-thinking budget of 1024 / 4096 / 16384 tokens) | none"})
    max_tokens: int | None = field(default=None, metadata={"bounds": (1, 1 << 22), 
        "help": "tokens one reply may generate (reasoning included); None: the backend's default"})
    history_length: int | None = field(default=None, metadata={"bounds": (0, 10_000), 
        "help": "the last action/observation pairs shown to an LLM executor; None or 0: none"})
    timeout_s: float = field(default=120.0, metadata={"bounds": (0.001, 86_400.0), 
        "help": "seconds per request: the API SDKs (openai, anthropic) retry 429 / 5xx / timeouts; hf stops a "
                "generation that runs past it (the game is unmeasured)"})
    max_retries: int = field(default=2, metadata={"bounds": (0, 100), 
        "help": "retries the openai / anthropic SDK makes of a failed request (429, 5xx, timeout)"})
    usd_per_mtok: list | None = field(default=None, metadata={
        "help": "[input, output] USD per million tokens this model bills, where the price table "
                "(evals/prices.py) lacks it or you pay otherwise; None: the table's price (a model it lacks: "
                "an unknown cost, which the cost gate sends to a person's approval)"})

    def __post_init__(self):
        # YAML 1.1 reads a bare `on` / `off` as a boolean: the switch the setting means
        if isinstance(self.reasoning_effort, bool):
            self.reasoning_effort = "on" if self.reasoning_effort else "none"

    def rules(self, where: str) -> None:
        problem = decoding_problem(where, self)
        if problem:
            raise ConfigError(problem)
        price = self.usd_per_mtok
        if price is not None and not (isinstance(price, list) and len(price) == 2 and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x < 1e6 for x in price)):
            raise ConfigError(f"{where}.usd_per_mtok: [input, output] USD per million tokens, two numbers "
                              f"from 0, got {price!r}")


DECODINGS = ("generate", "admissible")
LIKELIHOODS = ("mean", "sum")


def scoring() -> tuple:
    """The backends that score continuations (read from the registry at each call)."""
    return tuple(b.name for b in registry.BACKENDS if b.scores)


def decoding_of(section) -> str:
    """How a backend section's model answers: its executor.decoding, or `generate` for a section
    that has no such key (curator, judge, optimizer: they always write their answer)."""
    return getattr(section, "decoding", DECODINGS[0])


@dataclass
class ExecutorConfig(BackendConfig):
    # How a model executor picks its action: it generates one (the paper's way: free text, parsed
    # from <action>...</action>, a non-admissible one coerced), or every admissible action is
    # scored as a continuation of the same prompt and the most likely is taken (a small model that
    # echoes its prompt still acts; nothing is coerced). A departure from the paper that gate 1
    # diffs (toolkit/gates/references).
    decoding: str = field(default="generate", metadata={"choices": DECODINGS,
        "help": "generate (the model writes its action; the paper's) | admissible (each admissible action is "
                f"scored as a continuation of the prompt and the most likely taken; backends that score: "
                f"{', '.join(scoring())}; executors that choose so: the household's)"})
    likelihood: str = field(default="mean", metadata={"choices": LIKELIHOODS,
        "help": "admissible decoding's score of an action: mean (per-token mean log-probability: no bias toward "
                "short actions) | sum (the action's log-probability: favours short ones); ties: the first listed"})

    def rules(self, where: str) -> None:
        super().rules(where)
        entry = registry.BACKENDS.get(self.backend)
        if self.decoding == "admissible" and self.reasoning_effort not in (None, "none"):
            raise ConfigError(f"{where}.reasoning_effort: admissible decoding scores the action right after the "
                              f"prompt, with no reasoning before it; set {where}.reasoning_effort none or "
                              f"{where}.decoding generate")
        if self.decoding == "admissible" and not (entry and entry.scores):
            raise ConfigError(f"{where}.decoding: admissible needs a backend that scores continuations "
                              f"({', '.join(scoring())}); "
                              f"backend {self.backend} only generates: set {where}.backend to one of them or "
                              f"{where}.decoding generate")


@dataclass
class CuratorConfig(BackendConfig):
    # The tool surface: the paper's three tools, or curate_and_advance(operations), the one tool
    # skillos train publishes. A trained curator must be evaluated on the surface it learned.
    tools: str = field(default="paper", metadata={"choices": CURATOR_TOOLS, 
        "help": "the curator's tool surface: paper (the paper's three tools) | curate_and_advance (one "
                "tool, curate_and_advance(operations), the surface skillos train publishes)"})
    # What the curator reads of each game: the last N steps of its trajectory (evals/curation.py
    # curator_input), in training (training/curator/env.py) and in eval (evals/backends/llm_curator.py) alike.
    history_length: int | None = field(default=None, metadata={"bounds": (0, 10_000), 
        "help": "the last trajectory steps (action and observation) the curator reads after each game; None: 30; "
                "0: the task, the skills retrieved, the step count and the result only"})


@dataclass
class JudgeConfig(BackendConfig):
    backend: str | None = field(default=None, metadata={"choices": registry.BACKENDS, 
        "help": "the judge's backend (as executor.backend); None: no judge unless one is named"})


def decoding_problem(section: str, b: BackendConfig) -> str | None:
    """Why backend `b.backend` cannot carry this section's decoding settings as configured (one
    line, naming the key and the fix), else None: the backend's own rule (its registry entry's
    `decoding`). A backend reads the effort's meaning from its entry too."""
    entry = registry.BACKENDS.get(b.backend)
    if not registry.uses_model(b.backend) or entry is None or not entry.decoding:
        return None
    return registry.load(entry.decoding)(section, b)


