"""What plugs in by name: model backends, compute backends, environments, trainers and canaries,
each a table of entries.

Every fact about a backend (its class, pip extra, key variable, whether it runs here, what
`doctor` and the gates check) is one entry in BACKENDS; the config schema, `make_chat`, the
doctor, the gates and the sleep cycle read it here instead of keeping a list of their own. An
entry names its code as "module:attribute", imported on first use: the schema reads this table
without importing evals or training (the layering), and naming one backend never loads another's
SDK. A new backend, environment or trainer is one entry here, never an `if name == ...` branch.
"""

from __future__ import annotations

import importlib
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, Iterator, TypeVar
from skillos.errors import SkillosError


def load(target: str, default_attr: str | None = None):
    """The object a "module:attribute" target names (`default_attr` when it names a module only)."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr or default_attr)


@dataclass(frozen=True)
class Backend:
    """One backend. A model backend's `chat` module holds its class (evals/backends/chat.py
    ChatBackend: `chat(messages, tools)`) and a module-level `sent(config)`: what each request
    receives from a config section, which the gates' trace reads without sending anything. A
    remote backend (not `local`) also names `key_env` (the variable its key is read from) and
    `client` (what `skillos doctor` lists the endpoint's models with)."""

    name: str
    chat: str | None = None  # "module:Class" of its chat model (None: no model, the heuristic)
    about: str = ""  # what it is, in a few words: the config's help lists every entry with it
    local: bool = False  # runs the weights here, through the model's own chat template and sampler
    key_env: str | None = None  # where its API key is read when api_key_env names none
    extra: str | None = None  # the pip extra that installs it
    modules: tuple = ()  # what must import for it to run: the gates' extras check
    install: str = ""  # the line that installs those modules
    gpu_only: bool = False  # installed by hand on a GPU machine: a missing install is a warning here
    client: str | None = None  # "module:Class" of the SDK client doctor lists models with
    sampler_defaults: str | None = None  # what it samples with when the config sets no decoding
    # "module:function(section, backend_config)" -> why it cannot carry those decoding settings, or None
    decoding: str | None = None
    paid: bool = False  # bills per token at a vendor (evals/prices.py: the cost gate estimates it)
    # scores given continuations of a prompt by their likelihood (executor.decoding admissible):
    # its chat class has `score(messages, continuations, likelihood) -> [float]`
    scores: bool = False
    # seeds each sampled call from a trial's draws (eval.trials: backends.chat.SAMPLING_SEED);
    # False: its plays are independent draws, not reproducible per trial
    seeds: bool = False


@dataclass(frozen=True)
class Environment:
    name: str
    target: str  # "module:OBJECT" implementing the Environment protocol (evals/envs/registry.py)
    about: str = ""  # what it is, in a few words: the config's help lists every entry with it
    # "module:Class" of a pool running its training games' engine in worker processes
    # (env.engine_workers); None: its games have no engine to move out of the trainer's process
    engine_pool: str | None = None


@dataclass(frozen=True)
class Trainer:
    """One trainer, with what the gates ask of it: they read these capabilities, never its name."""

    name: str
    target: str  # "module" (its `train`) or "module:function"; called as train(cfg, ledger, echo=...)
    args_spec: str  # "module:function" -> (class, keyword arguments) the trainer is built with
    about: str = ""  # what it is, in a few words: the config's help lists every entry with it
    grpo: bool = False  # trains with GRPO (group-relative advantages): the GRPO gates apply; else fixed rows
    plays_itself: bool = False  # the trained model is the executor: no executor model runs beside it in training
    # The environment its training rollouts play, where not the config's env.name: the selector's
    # play one slate task per rollout (evals/envs/slate), whose executor decodes as the slate's does.
    rollout_env: str | None = None
    judge_reward: bool = False  # its reward asks the judge (r_cnt) when reward.lambda_cnt > 0
    # "module:function(cfg, train_games, game, executor) -> bool": whether its training rollouts refuse
    # a game outside the train pool (gate 4's splits-disjoint plays it); None: its method's checks say
    held_out_probe: str | None = None
    selector_credit: bool = False  # reads skillgate.selector_credit and selector_coef
    trainer_class: str | None = None  # "module:function(cfg)" -> its TRL trainer class (the gates' trace)
    model_consumer: str = ""  # what receives training.model, as the gates' trace names it
    async_rollouts: bool = False  # can play the next batch's rollouts while a step trains (training.async_rollouts)

    def train_function(self):
        return load(self.target, "train")


E = TypeVar("E")


class Registry(Generic[E]):
    """Entries by name, in the order given (the order error messages list them in)."""

    def __init__(self, kind: str, *entries: E):
        self.kind = kind
        self._entries = {e.name: e for e in entries}

    def names(self) -> tuple:
        return tuple(self._entries)

    def __contains__(self, name) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[E]:
        return iter(self._entries.values())

    def __getitem__(self, name: str) -> E:
        if name not in self._entries:
            raise SkillosError(f"{name!r} is not a {self.kind}; use one of {', '.join(self._entries)}")
        return self._entries[name]

    def get(self, name) -> E | None:
        return self._entries.get(name)

    @contextmanager
    def extended(self, *entries: E):
        """The registry with `entries` added for the duration (a plug-in's tests; a name already
        registered is refused), then as it was."""
        clash = [e.name for e in entries if e.name in self._entries]
        if clash:
            raise SkillosError(f"{', '.join(clash)}: already a {self.kind}")
        before = dict(self._entries)
        self._entries.update({e.name: e for e in entries})
        try:
            yield self
        finally:
            self._entries = before

    def listed(self) -> str:
        """Every entry's name with what it is (its `about`), for a help string: "a (what a is) | b"."""
        return " | ".join(f"{e.name} ({e.about})" if getattr(e, "about", "") else e.name for e in self)


TORCH_FIRST = "pip install torch==2.13.0 (CPU build; first, or pip pulls CUDA) && "

BACKENDS: Registry[Backend] = Registry(
    "backend",
    Backend("heuristic", about="offline rules, no model"),
    Backend("openai", chat="skillos.evals.backends.openai_chat:OpenAIChat", key_env="OPENAI_API_KEY", paid=True,
            about="the OpenAI API or any OpenAI-compatible base_url",
            extra="llm", modules=("openai",), install="pip install 'skillos[llm]'", client="openai:OpenAI",
            sampler_defaults="the endpoint's defaults", decoding="skillos.evals.backends.openai_chat:openai_decoding", seeds=True,
            scores=True),  # through a base_url server that echoes prompt log-probabilities (openai_decoding)
    Backend("anthropic", chat="skillos.evals.backends.anthropic_chat:AnthropicChat", key_env="ANTHROPIC_API_KEY",
            about="the Anthropic API", paid=True,
            extra="llm", modules=("anthropic",), install="pip install 'skillos[llm]'",
            client="anthropic:Anthropic", sampler_defaults="the API's defaults",
            decoding="skillos.evals.backends.anthropic_chat:anthropic_decoding"),
    Backend("vllm", chat="skillos.evals.backends.vllm_chat:VLLMChat", local=True, modules=("vllm",),
            about="vLLM in this process, GPU",
            install="pip install vllm (on the GPU machine; it pins its own torch)", gpu_only=True,
            sampler_defaults="vLLM's T 1.0, top_p 1, no top_k", decoding="skillos.evals.backends.chat:local_decoding"),
    Backend("hf", chat="skillos.evals.backends.hf_chat:HFChat", local=True, extra="hf",
            about="transformers in this process, CPU or GPU",
            modules=("torch", "transformers", "peft"), install=TORCH_FIRST + "pip install 'skillos[hf]'",
            sampler_defaults="transformers' T 1.0, top_p 1, top_k 50", decoding="skillos.evals.backends.chat:local_decoding",
            scores=True, seeds=True),
)


def model_backends() -> tuple:
    """The backends that run a model: every one serves as executor, curator or judge. Read from
    BACKENDS at each call, so an entry a plug-in adds (`BACKENDS.extended`) is one."""
    return tuple(b.name for b in BACKENDS if b.chat)


(NO_MODEL,) = (b.name for b in BACKENDS if not b.chat)  # the heuristic: rules written for each environment


def uses_model(backend: str | None) -> bool:
    """Whether a section's backend runs a model (False: unset, or the no-model heuristic)."""
    return backend not in (None, NO_MODEL)


def local_backends() -> tuple:
    """The backends that run the weights here (read at each call, as model_backends)."""
    return tuple(b.name for b in BACKENDS if b.local)

DEFAULT_LOCAL = "hf"  # the local backend that runs anywhere (CPU or GPU): a checkpoint's default


def default_key_env(backend: str | None) -> str | None:
    """The environment variable backend `backend` reads its API key from when the config names none."""
    entry = BACKENDS.get(backend)
    return entry.key_env if entry else None


def key_env(section) -> str:
    """The environment variable a config section's API key is read from ("" when it has none)."""
    return section.api_key_env or default_key_env(section.backend) or ""


@dataclass(frozen=True)
class Compute:
    """Where a run's work goes (`compute.backend`), with what the gates, the launcher and the
    eval ask of it: they read these, never its name."""

    name: str
    about: str = ""  # what it is, in a few words: the config's help lists every entry with it
    in_process: bool = False  # runs in this process, on this machine
    trains: str | None = None  # "module:plan_function,run_function" of a training launch (training/common/launch.py); None: no training
    distributes: bool = False  # eval, sweep and canary runs as tasks on a cluster (evals/distributed.py)
    spends_gpus: bool = False  # launches on GPUs: a person's approval and a passing canary come first
    multi_node: bool = False  # launches on several machines, its plan placing servers on GPUs beside training
    own_image: bool = False  # runs in an image that installs its own extras: this machine's are not checked
    gpu_by_type: bool = False  # asks a provider for GPUs by TYPE:N (devices.gpu_spec's default when none is named)
    modules: tuple = ()  # what must import for it to run: the gates' extras check
    install: str = ""  # the line that installs those modules
    watched: str = ""  # where gate 7's watchdog runs beside a training launch
    box_outlives_job: bool = True  # the machine lives on after the job (False: it ends with it, billing nothing after)

    def launch_functions(self):
        """(plan, run) of its training launch (training/common/launch.py)."""
        module, _, names = (self.trains or "").partition(":")
        return tuple(load(f"{module}:{n}") for n in names.split(","))


# compute.backend ray (evals/distributed.py): what it imports, and the line that installs it (the
# gates' extras check, doctor and the driver's own error read them here)
RAY_MODULES, RAY_INSTALL = ("ray",), "pip install 'skillos[ray]'"

COMPUTE: Registry[Compute] = Registry(
    "compute backend",
    Compute("local", about="this machine, this process", in_process=True,
            trains="skillos.training.common.launch:plan_local,run_local",
            watched="a process beside this one, watching it and the output folder"),
    Compute("accelerate", about="training on GPUs through accelerate launch",
            trains="skillos.training.common.launch:plan_accelerate,run_accelerate", spends_gpus=True, multi_node=True,
            watched="a process on this machine beside `accelerate launch`, watching it and the output folder"),
    Compute("modal", about="training in a Modal container", trains="skillos.training.common.launch:plan_modal,run_modal",
            spends_gpus=True, own_image=True, gpu_by_type=True, box_outlives_job=False,
            watched="a process in the Modal container beside the job, watching it and the output folder on the "
                    "volume, recording to the volume's ledger"),
    Compute("ray", about="eval, sweep, matrix and canary runs as Ray tasks", distributes=True,  # no training
            modules=RAY_MODULES, install=RAY_INSTALL),
)
TRAINING_BACKENDS = tuple(c.name for c in COMPUTE if c.trains)
(IN_PROCESS,) = (c.name for c in COMPUTE if c.in_process)  # local: what a run's identity names for any place


def compute_of(cfg) -> Compute:
    """The registry entry of the compute backend a config names (`compute.backend`)."""
    return COMPUTE[cfg.compute.backend]


@dataclass(frozen=True)
class AgentCLI:
    """A coding agent run non-interactively (`skillos sleep transfer`, training/textopt/sleep/transfer.py):
    the command line (`{prompt}` stands for the request), where it discovers a project's skills
    (the folder `npx skills add` installs to for that agent), and "module:function" reading its
    stdout into (answer, cost in USD or None)."""

    name: str
    argv: tuple
    skills_dir: str
    parse: str


AGENT_CLIS: Registry[AgentCLI] = Registry(
    "coding-agent CLI",
    AgentCLI("claude", ("claude", "-p", "--output-format", "json", "--", "{prompt}"), ".claude/skills",
             "skillos.training.textopt.sleep.transfer:claude_json"),
    AgentCLI("codex", ("codex", "exec", "--skip-git-repo-check", "--", "{prompt}"), ".codex/skills",
             "skillos.training.textopt.sleep.transfer:plain_text"),
)

ENVIRONMENTS: Registry[Environment] = Registry(
    "environment",
    Environment("household", "skillos.evals.envs.household.environment:HOUSEHOLD", about="ALFWorld",
                engine_pool="skillos.evals.envs.alfworld.pool:EnginePool"),
    Environment("reasoning", "skillos.evals.envs.reasoning.environment:REASONING", about="graded problems"),
    Environment("slate", "skillos.evals.envs.slate.environment:SLATE", about="SkillGate's skill slates"),
)

TRAINERS: Registry[Trainer] = Registry(
    "trainer",
    # SkillOS Algorithm 1 (the curator)
    Trainer("curator", "skillos.training.curator.trainer", about="SkillOS: GRPO on the curator",
            args_spec="skillos.training.common.grpo:args_spec", grpo=True, judge_reward=True,
            trainer_class="skillos.training.curator.trainer:trainer_class", async_rollouts=True,
            model_consumer="GRPOTrainer(model=)", held_out_probe="skillos.training.curator.env:refuses_game"),
    # SkillGate: GRPO + selector credit
    Trainer("selector", "skillos.training.selector.trainer", about="SkillGate: GRPO + selector credit",
            args_spec="skillos.training.selector.grpo:args_spec", rollout_env="slate",
            grpo=True, plays_itself=True, selector_credit=True,
            trainer_class="skillos.training.selector.grpo:trainer_class", model_consumer="SelectorGRPOTrainer(model=)"),
    # SFT on the gold first read
    Trainer("selector-bc", "skillos.training.selector.baselines:train_bc", about="SFT on the gold first read",
            args_spec="skillos.training.selector.baselines:bc_args_spec", plays_itself=True, rollout_env="slate",
            model_consumer="SFTTrainer(model=)"),
    # the gold read over the misleading read
    Trainer("selector-dpo", "skillos.training.selector.baselines:train_dpo",
            about="DPO: the gold read over the misleading read",
            args_spec="skillos.training.selector.baselines:dpo_args_spec", plays_itself=True, rollout_env="slate",
            model_consumer="DPOTrainer(model=)"),
)


@dataclass(frozen=True)
class Canary:
    """A learning canary (training/canary/): `skillos canary NAME` and gate 6 find it here."""

    name: str
    target: str  # "module:CANARY", the object implementing training/canary's Canary


CANARIES: Registry[Canary] = Registry(
    "canary",
    Canary("curator", "skillos.training.curator.canary:CANARY"),  # SkillOS GRPO, curator env, reading executor
    Canary("selector", "skillos.training.selector.canary:CANARY"),  # SkillGate GRPO with clean-oracle credit
    Canary("optimize", "skillos.training.textopt.canary:CANARY"),  # text-space optimization with its gate
)


@dataclass(frozen=True)
class Method:
    """One method, a package under training/ that brings its own pieces: the trainers `skillos train`
    runs for it, its learning canaries, the module of its launch-gate checks (written with
    skillos.checking's words), which the gates run beside their generic ones, and the module of its
    trace resolvers (skillos.tracing's words), which the gates' trace asks before theirs. A new method is a
    folder and one entry here (docs/extending.md)."""

    name: str
    package: str  # "skillos.training.<name>"
    about: str = ""
    trainers: tuple = ()  # its TRAINERS entries (skillgate.trainer values)
    canaries: tuple = ()  # its CANARIES entries
    checks: str | None = None  # "module": its gate checks (@static, @dry_run, @machine functions)
    trace: str | None = None  # "module": its trace resolvers (skillos.tracing's @resolver functions)


METHODS: Registry[Method] = Registry(
    "method",
    Method("curator", "skillos.training.curator", about="SkillOS: a GRPO-trained curator maintains the skill repo",
           trainers=("curator",), canaries=("curator",), checks="skillos.training.curator.checks",
           trace="skillos.training.curator.trace"),
    Method("selector", "skillos.training.selector", about="SkillGate: the executor learns which skill to read",
           trainers=("selector", "selector-bc", "selector-dpo"), canaries=("selector",),
           checks="skillos.training.selector.checks", trace="skillos.training.selector.trace"),
    Method("textopt", "skillos.training.textopt", about="SkillOpt: text-space optimization of the skill documents",
           canaries=("optimize",), checks="skillos.training.textopt.checks", trace="skillos.training.textopt.trace"),
)


def trainer_of(cfg) -> Trainer:
    """The registry entry of the trainer a config selects (`skillgate.trainer`)."""
    return TRAINERS[cfg.skillgate.trainer]
