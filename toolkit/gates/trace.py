"""Where every setting a gate approves goes, and what arrives there (`skillos gate check --trace`).

A gate that PASSes a value the code never reads approves nothing: `training.max_prompt_length`
passed the Table-4 diff while TRL 1.16's GRPOConfig dropped it, and `executor.reasoning_effort`
passed while the vllm and hf backends never read it. The trace takes every config key a check
read (the keys of the results that did not SKIP; a derived quantity brings the keys it is made
of) and, for each, builds the real object that key configures without running it: the trainer's
arguments (`GRPOConfig` and skillos's subclasses, `SFTConfig`, `DPOConfig`), the `LoraConfig`,
the launch plan, each model backend's request body or sampling parameters
(`evals.backends.chat.sent`), the executor's prompt, the retrieval call of a scripted play, the
reward function on scripted rollouts, the environment's group sizes. Each row says `key, value,
consumer, arrived, applied`. A key a check approved that no consumer receives is a FAIL,
"checked but not applied"; a consumer that cannot be built on this machine (an extra not
installed) is a WARN, unverified.

Consumers are looked up by key pattern (skillos.tracing's `resolver`), so a key a new check reads
is traced, or FAILs as having no consumer, without anyone listing it here first. A method's
package brings the resolvers of the keys its trainers read their own way (its `trace` module in
skillos.registry.METHODS: the curator's groups and reward weights, the selector's slate episode);
they are asked first for a config whose skillgate.trainer is one of its trainers (a method with no
weight trainer, textopt, for every config: its optimize.* keys), then the ones here.
"""

from __future__ import annotations

import re
import tempfile
import warnings
from pathlib import Path

from skillos.checking import Context, Result
from skillos.registry import METHODS, NO_MODEL, TRAINERS, local_backends, model_backends, uses_model
from skillos.config.compute import ComputeConfig
from skillos.config.derived import relative_to_config, server_gpus, training_output_dir
from skillos.evals.arms import arm_settings, game_sets
from skillos.evals.backends.chat import sent
from skillos.evals.backends.llm_curator import LLMCurator
from skillos.evals.backends.tiny_model import TINY_NAME
from skillos.evals.curation import curator_input
from skillos.evals.envs.household.llm import LLMEpisode
from skillos.evals.envs.registry import environment, rollout_environment
from skillos.evals.envs.scripted import ScriptedEnv, ScriptedGame
from skillos.evals.runner import play
from skillos.gates.approval import paid_estimate
from skillos.gates.static import derived
from skillos.ledger.watchdog import launch_watch
from skillos.models import MODELS, models_dir
from skillos.registry import COMPUTE, IN_PROCESS, compute_of, load, trainer_of
from skillos.repo import Retriever, SkillRepo
from skillos.training.common.grpo import lora_config
from skillos.training.common.launch import plan
from skillos.training.common.prompt_cap import PromptCap
from skillos.training.common.warmup import format_warmup_steps
from skillos.training.registry import args_spec, trainer_for
from skillos.tracing import (UNSET, Row, equal, not_used, plain, probe_trajectory, resolver, resolvers, row, show,
                             steps_row)

INCIDENT = "a setting the gate approved never reached the code it configures (checked but not applied)"
# derived quantities -> the config keys they are made of
DERIVED = {
    "prompts_per_step": ("training.per_device_train_batch_size", "training.gradient_accumulation_steps",
                         "compute.num_processes", "training.num_generations"),
    "completions_per_step": ("training.per_device_train_batch_size", "training.gradient_accumulation_steps",
                             "compute.num_processes"),
}
BACKEND_SECTIONS = ("executor", "curator", "judge", "optimize.optimizer", "sleep.model", "sleep.optimizer")
BACKEND_FIELDS = ("model", "temperature", "top_p", "top_k", "max_tokens", "reasoning_effort")
def _section(cfg, dotted: str):
    for part in dotted.split("."):
        cfg = getattr(cfg, part)
    return cfg


def _get(cfg, key: str):
    value = cfg
    for part in key.split("."):
        if not hasattr(value, "__dataclass_fields__") or part not in value.__dataclass_fields__:
            return UNSET
        value = getattr(value, part)
    return UNSET if hasattr(value, "__dataclass_fields__") else value


# -- which keys ---------------------------------------------------------------------------------
def gated_keys(cfg, results: list[Result]) -> list[str]:
    """Every config key a check read and did not SKIP, in order; derived quantities with the keys
    they are made of. Keys that are not config keys (a file, `tools`, an extra) are left out."""
    keys: dict = {}
    for r in results:
        if r.status == "SKIP":
            continue
        for key in (r.key, *r.reads):
            if key in DERIVED:
                keys[key] = None
                keys.update(dict.fromkeys(DERIVED[key]))
            elif key and _get(cfg, key) is not UNSET:
                keys[key] = None
    return list(keys)


# -- the objects, built once per trace ------------------------------------------------------------
class Tracer:
    """Builds each consumer object once, without running it."""

    def __init__(self, ctx: Context):
        self.ctx, self.cfg = ctx, ctx.cfg
        self._cache: dict = {}
        self.refused: str | None = None  # why the trainer's arguments class refused the config's values

    def cached(self, name: str, build):
        if name not in self._cache:
            try:
                self._cache[name] = (build(), None)
            except ImportError as exc:
                self._cache[name] = (None, f"not built here: {exc} (install the extra that provides it)")
        value, missing = self._cache[name]
        if missing:
            raise _Unverified(missing)
        return value

    @property
    def trainer(self) -> str:
        return self.cfg.skillgate.trainer

    @property
    def gpu(self) -> bool:
        """Whether the launch this config describes runs on GPUs (compute.gpu names them)."""
        return bool(self.cfg.compute.gpu)

    def args(self):
        """The trainer's arguments object, as `skillos train` builds it for this config (a GPU
        launch traced on a machine without one is built with use_cpu added, nothing else). If the
        arguments class refuses the values (TRL's own checks), the object is filled field by field
        without them, so each key still shows what it was passed, and `refused` says why."""
        def build():
            cls, kwargs = args_spec(self.cfg, not self.gpu, training_output_dir(self.cfg))
            try:
                with warnings.catch_warnings():  # transformers' deprecation notes are not the config's
                    warnings.simplefilter("ignore", FutureWarning)
                    return cls(**kwargs)
            except ValueError as exc:
                if self.gpu and "gpu" in str(exc).lower():
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore", FutureWarning)
                            return cls(**kwargs, use_cpu=True)
                    except ValueError as again:
                        exc = again
                self.refused = f"{cls.__name__} refuses these arguments: {exc}"[:400]
                return _unvalidated(cls, kwargs)
        return self.cached("args", build)

    @property
    def entry(self):
        """The trainer's registry entry: what it is able to do, asked instead of its name."""
        return trainer_of(self.cfg)

    def trainer_class(self):
        def build():
            spec = self.entry.trainer_class
            return load(spec)(self.cfg) if spec else None
        return self.cached("trainer_class", build)

    @property
    def training_launch(self) -> bool:
        """Whether the launch traced is a training launch (`skillos train`, or `gate check` of a
        config that trains), which training/common/launch.py makes on compute.backend's path; every other
        launch runs in skillos.api's process (local, or a Ray driver)."""
        return self.cfg.training.is_set() and self.ctx.command in (None, "train")

    @property
    def path(self) -> str:
        """The launch path, as its rows name it: a training launch's backend, else the command."""
        if self.training_launch:
            return self.launch_plan()["backend"]
        return self.ctx.command or ("optimize" if "optimize" in self.cfg.declared else "eval")

    def launch_plan(self) -> dict:
        """The launch training/common/launch.plan makes for this config: what launch() runs, as data."""
        def build():
            return plan(self.cfg, str(self.cfg.source or "config.yaml"))
        return self.cached("launch", build)

    def launch_processes(self) -> tuple[int, str]:
        p = self.launch_plan()
        command = p["command"]
        n = int(command[command.index("--num_processes") + 1]) if "--num_processes" in command else 1
        return n, f"the {p['backend']} launch ({' '.join(map(str, command[:4]))} ...)"

    def sent(self, section: str) -> dict:
        def build():
            return sent(_section(self.cfg, section))
        return self.cached(f"sent:{section}", build)


class _Unverified(Exception):
    pass


def _unvalidated(cls, kwargs: dict):
    """An instance of dataclass `cls` with its defaults and `kwargs`, its __post_init__ not run."""
    import dataclasses

    obj = cls.__new__(cls)
    for f in dataclasses.fields(cls):
        if f.name in kwargs:
            value = kwargs[f.name]
        elif f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
        else:
            value = None
        object.__setattr__(obj, f.name, value)
    return obj


# training.* ------------------------------------------------------------------------------------

@resolver(r"^training\.lora$")
def _lora(t: Tracer, key, value):
    if value is None:
        return Row(key, value, "GRPOTrainer(peft_config=None)", True, None, "full fine-tuning")

    def build():
        return lora_config(t.cfg)
    lora = t.cached("lora", build)
    arrived = {k: getattr(lora, k, UNSET) for k in value}
    arrived = {k: (None if v is UNSET else v) for k, v in arrived.items()}
    return row(key, value, "peft LoraConfig (the trainer's peft_config)", arrived)


@resolver(r"^training\.model$")
def _model(t: Tracer, key, value):
    return row(key, value, t.entry.model_consumer + " via tiny_model.resolve (weights read where they are, never downloaded)",
               value, "read as configured; resolved to a local folder at launch")


@resolver(r"^(training\.(group_size|grouping|curriculum|max_instructions)|reward\.lambda_(fc|cnt|comp))$")
def _method_key(t: Tracer, key, value):
    """A key only some methods' trainers read, each resolved by its method's trace module: this
    trainer's method resolves none, so the value reaches no code."""
    return not_used(key, value, f"skillgate.trainer {t.trainer} does not read it")


@resolver(r"^training\.max_prompt_length$")
def _max_prompt_length(t: Tracer, key, value):
    args = t.args()
    if not t.entry.grpo:  # fits fixed rows
        return row(key, value, "selector/baselines: every row's prompt cut by prompt_cap.cap_text",
                   t.cfg.training.max_prompt_length, f"and {type(args).__name__}.max_length "
                   f"{getattr(args, 'max_length', None)} (prompt + completion)")

    cls = t.trainer_class()
    arrived = getattr(args, "max_prompt_length", None)
    capped = cls is not None and issubclass(cls, PromptCap)
    return row(key, value, f"{type(args).__name__}.max_prompt_length, cut by PromptCap._tokenize_prompts "
               "(TRL 1.16's GRPOConfig has no such field)", arrived,
               "" if capped else "the trainer class does not cut prompts", applied=capped and equal(value, arrived))


@resolver(r"^training\.max_turn_tokens$")
def _max_turn_tokens(t: Tracer, key, value):
    args = t.args()
    kwargs = getattr(args, "generation_kwargs", None) or {}
    name = "max_tokens" if getattr(args, "use_vllm", False) else "max_new_tokens"
    if value is None:
        return row(key, value, f"{type(args).__name__}.generation_kwargs (unset: a turn may use what is left of "
                   "max_completion_length)", kwargs.get(name))
    return row(key, value, f"{type(args).__name__}.generation_kwargs[{name!r}]: every generation call of a turn "
               "(TRL updates its generation config with it; vLLM's sampling params under use_vllm)", kwargs.get(name))


@resolver(r"^training\.rollout_concurrency$")
def _rollout_concurrency(t: Tracer, key, value):
    return row(key, value, "training/curator/rollouts.rollout_trainer(concurrency=)", value,
               "read as configured when the trainer class is built")


@resolver(r"^training\.(?P<name>async_rollouts|max_staleness)$")
def _async_rollouts(t: Tracer, key, value, name):
    if not t.entry.async_rollouts:
        return not_used(key, value, f"skillgate.trainer {t.trainer} trains on-policy only")
    cls = t.trainer_class()
    plays_ahead = hasattr(cls, "staleness_bound")  # training/curator/async_rollouts.AsyncRolloutTrainer's own attribute
    if name == "async_rollouts":
        return row(key, value, "training/curator/async_rollouts.async_trainer around the trainer class", plays_ahead,
                   f"{getattr(cls, '__name__', cls)}", applied=plays_ahead == bool(value))
    bound = getattr(cls, "staleness_bound", None)
    return row(key, value, "training/curator/async_rollouts.AsyncRolloutTrainer.staleness_bound", bound,
               ("the trainer refuses to train without it (gate 1 staleness-bound)" if plays_ahead else
                 "rollouts on-policy") if value is None else "")


@resolver(r"^training\.format_warmup_steps$")  # gate 1 diffs it against the paper's none
def _format_warmup(t: Tracer, key, value):
    steps = format_warmup_steps(t.cfg)
    return row(key, value, "training/common/warmup.warm_up(steps=) before GRPO, by training/curator/trainer._warm", steps,
               "" if steps else "no warm-up runs (format_warmup_steps 0)")


@resolver(r"^training\.resume_from_checkpoint$")
def _resume(t: Tracer, key, value):
    return row(key, value, "trainer.train(resume_from_checkpoint=) in training/common/grpo.fit", value,
               "read as configured by fit()")


@resolver(r"^training\.checkpoint_gb$")
def _checkpoint_gb(t: Tracer, key, value):
    return row(key, value, "the gates' disk check (a planning input, not a trainer setting)", value)


@resolver(r"^training\.(?P<name>\w+)$")
def _training_field(t: Tracer, key, value, name):
    args = t.args()
    cls = type(args).__name__
    if name == "output_dir":
        return row(key, value, f"{cls}.output_dir", args.output_dir, applied=equal(str(training_output_dir(t.cfg)),
                                                                                    args.output_dir))
    if not hasattr(args, name):
        if not t.entry.grpo and name == "max_completion_length":
            arrived = getattr(args, "max_length", None)
            mp = t.cfg.training.max_prompt_length
            return row(key, value, f"{cls}.max_length (max_prompt_length + max_completion_length)", arrived,
                       applied=value is None or (mp is not None and equal(arrived, mp + value)))
        return not_used(key, value, f"{cls} (skillgate.trainer {t.trainer}) has no {name}")
    return row(key, value, f"{cls}.{name}", getattr(args, name))


# derived batch quantities and the launch -------------------------------------------------------
@resolver(r"^compute\.num_processes$")
def _num_processes(t: Tracer, key, value):
    if not t.training_launch:
        return Row(key, value, f"the {t.path} (skillos.api)", value == 1, 1,
                   "" if value == 1 else f"the {t.path} runs in one process: it ignores compute.num_processes")
    n, where = t.launch_processes()
    return row(key, value, f"{where}: --num_processes", n)


@resolver(r"^(prompts|completions)_per_step$")
def _per_step(t: Tracer, key, value):
    value = derived(t.cfg, key)
    args = t.args()
    n, _ = t.launch_processes()
    completions = args.per_device_train_batch_size * args.gradient_accumulation_steps * n
    g = getattr(args, "num_generations", None)
    arrived = completions if key == "completions_per_step" else (completions / g if g else None)
    return row(key, value, f"{type(args).__name__}.per_device_train_batch_size x gradient_accumulation_steps x "
               "launch processes" + (" / num_generations" if key == "prompts_per_step" else ""), arrived,
               f"{args.per_device_train_batch_size} x {args.gradient_accumulation_steps} x {n}")


# skillgate ---------------------------------------------------------------------------------------
@resolver(r"^skillgate\.trainer$")
def _trainer(t: Tracer, key, value):
    fn = trainer_for(t.cfg)
    arrived = f"{fn.__module__}:{fn.__name__}"
    target = TRAINERS[value].target if value in TRAINERS else ""
    return row(key, value, "training/registry.trainer_for: what skillos train runs", arrived,
               applied=arrived == (target if ":" in target else f"{target}:train"))


@resolver(r"^skillgate\.(?P<name>selector_credit|selector_coef)$")
def _selector(t: Tracer, key, value, name):
    if not t.entry.selector_credit:
        return not_used(key, value, f"skillgate.trainer {t.trainer} has no selector credit")
    args = t.args()
    return row(key, value, f"{type(args).__name__}.{name}", getattr(args, name, None))


@resolver(r"^skillgate\.slate_size$")
def _slate_size(t: Tracer, key, value):
    slate_domain = environment("slate")

    sizes = slate_domain.slate_sizes(t.cfg)
    return row(key, value, "evals/envs/slate.build_slates: the oracle + slate_sizes (relevant, misleading, "
               "irrelevant) drawn per slate", 1 + sum(sizes), f"{sizes[0]} relevant, {sizes[1]} misleading, "
               f"{sizes[2]} irrelevant")


@resolver(r"^skillgate\.slate_repo$")
def _slate_repo(t: Tracer, key, value):
    slate_domain = environment("slate")

    with tempfile.TemporaryDirectory() as tmp:
        setup = slate_domain.make_slate_setup(t.cfg, [], tmp)
    return row(key, value, "evals/envs/slate.make_slate_setup: the slate skill folder loaded",
               str(setup.repo.root), applied=Path(setup.repo.root) == relative_to_config(t.cfg, value))


@resolver(r"^skillgate\.eval_spec$")
def _eval_spec(t: Tracer, key, value):
    return row(key, value, "evals/slate_eval.run and the eval-pins check: the frozen protocol compared", value,
               "read as configured")


# backends ------------------------------------------------------------------------------------------
@resolver(r"^(?P<section>executor|curator|judge|optimize\.optimizer|sleep\.model|sleep\.optimizer)\."
          r"(?P<name>model|temperature|top_p|top_k|max_tokens|reasoning_effort)$")
def _backend_field(t: Tracer, key, value, section, name):
    b = _section(t.cfg, section)
    if not uses_model(b.backend):
        return not_used(key, value, f"{section}.backend is {b.backend or 'unset'}: no model request is made")
    sent = t.sent(section)
    if name not in sent:  # a backend whose requests carry no such setting (its module's sent says so)
        return not_used(key, value, f"the {b.backend} backend's requests carry no {name} (its sent(config))")
    where, arrived = sent[name]
    if name == "reasoning_effort" and value is not None and b.backend in local_backends():
        template = _local_template(b.model)
        if template is not None and "enable_thinking" not in template:
            return Row(key, value, where, False, arrived, "the model's chat template has no enable_thinking switch "
                       "(the backend refuses it at start): unset reasoning_effort or use a Qwen3-style template")
        return row(key, value, where, arrived, "" if template is not None else
                   "the model's chat template is not on this machine: its switch is checked when the backend starts")
    return row(key, value, where, arrived)


@resolver(r"^executor\.(?P<name>decoding|likelihood)$")
def _executor_decoding(t: Tracer, key, value, name):
    b = t.cfg.executor
    if not uses_model(b.backend):
        return not_used(key, value, f"executor.backend is {b.backend or 'unset'}: no model request is made")
    sent = t.sent("executor")
    if name in sent:
        return row(key, value, *sent[name])
    if name == "likelihood":
        return not_used(key, value, f"executor.decoding is {b.decoding}: no action is scored")
    return row(key, value, f"{b.backend} chat(): the model writes its action", "generate")


def _local_template(model: str | None) -> str | None:
    """The chat template of a model already on this machine (a folder, the built tiny model, the
    hub cache), read without loading or building anything; None when it is not here."""
    import json

    if not model:
        return None
    folder = models_dir() / model if model in (TINY_NAME, *MODELS) else Path(model).expanduser()
    files = [folder / "chat_template.jinja", folder / "tokenizer_config.json"]
    if not folder.is_dir() and model.count("/") == 1:
        try:
            from huggingface_hub import try_to_load_from_cache

            files = [Path(f) for f in (try_to_load_from_cache(model, "chat_template.jinja"),
                                       try_to_load_from_cache(model, "tokenizer_config.json")) if isinstance(f, str)]
        except ImportError:
            return None
    for f in files:
        if f.is_file():
            text = f.read_text(encoding="utf-8", errors="replace")
            return text if f.suffix == ".jinja" else str(json.loads(text).get("chat_template") or "")
    return None


@resolver(r"^(?P<section>executor|curator|judge|optimize\.optimizer|sleep\.model|sleep\.optimizer)\.backend$")
def _backend(t: Tracer, key, value, section):
    if not uses_model(value):
        return not_used(key, value, "no model backend")
    return row(key, value, "evals/backends/chat.make_chat: the backend class built",
               value if value in model_backends() else None)


@resolver(r"^executor\.history_length$")
def _history(t: Tracer, key, value):
    cfg = t.cfg
    if cfg.executor.backend == NO_MODEL:
        return not_used(key, value, "the heuristic executor has no prompt history")
    played = rollout_environment(cfg) if cfg.training.is_set() else environment(cfg)
    if played.history_unused:
        return not_used(key, value, played.history_unused)

    class _Executor:  # the episode reads only its executor's config to render a prompt
        config = cfg.executor

    episode = LLMEpisode(_Executor(), "probe task", [])
    episode.history = [(f"probe-action-{i}", f"observation {i}") for i in range(50)]
    shown = len(re.findall(r"^> probe-action-\d+$", episode.prompt("now", ["look"]), re.M))
    return row(key, value, "evals/envs/household/llm.LLMEpisode.prompt: action/observation pairs shown",
               shown, "of 50 in the episode", applied=equal(value or 0, shown))


@resolver(r"^curator\.history_length$")
def _curator_history(t: Tracer, key, value):
    """The trajectory steps an eval's LLM curator reads after each game: a probe game of 50 steps
    rendered through it (a training curator's is its method's trace module's)."""
    cfg = t.cfg
    if cfg.training.is_set() or not uses_model(cfg.curator.backend):
        return not_used(key, value, "no model curator reads a trajectory in this config")
    curator = LLMCurator(cfg.curator)  # its client is built, nothing is asked of it
    return steps_row(key, value, "evals/backends/llm_curator.py: the curator's input",
                     curator_input(probe_trajectory(), history_length=curator.history_length))


# environment, retrieval, eval -----------------------------------------------------------------------
def _scripted_play(t: Tracer):
    def build():
        settings = arm_settings(t.cfg)
        repo = SkillRepo(None)
        for i in range(settings["top_k"] + 3):
            repo.insert(f"probe-skill-{i}", f"How to take the mug, variant {i}.")
        calls: list = []

        class Recording(Retriever):
            def search(self, query, k):
                calls.append(k)
                return super().search(query, k)

        class Executor:
            name, seen = "probe", []

            def new_episode(self, task, skills):
                self.seen.append(len(skills))
                return self

            def act(self, observation, admissible):
                return "look"

        executor = Executor()
        retriever = Recording(repo, t.cfg.retrieval.mode)
        traj = play(ScriptedEnv(win_action=None), executor, retriever, ScriptedGame("probe"),
                    settings["max_steps"], settings["top_k"])
        return {"k": calls[0] if calls else None, "skills": executor.seen[0] if executor.seen else None,
                "mode": retriever.mode, "steps": len(traj.steps)}
    return t.cached("play", build)


@resolver(r"^retrieval\.top_k$")
def _top_k(t: Tracer, key, value):
    unused = getattr(rollout_environment(t.cfg), "retrieval_unused", None) if t.cfg.training.is_set() else None
    if unused:  # training rollouts that play no retrieval (the slate's)
        return not_used(key, value, unused)
    p = _scripted_play(t)
    return row(key, value, "the retrieval call of every game (runner.play -> Retriever.search k)", p["k"],
               f"the executor received {p['skills']} skills")


@resolver(r"^retrieval\.mode$")
def _mode(t: Tracer, key, value):
    p = _scripted_play(t)
    return row(key, value, "Retriever(repo, mode) of every game", p["mode"])


@resolver(r"^env\.max_steps$")
def _max_steps(t: Tracer, key, value):
    p = _scripted_play(t)
    return row(key, value, "runner.play(max_steps) via arms.arm_settings: actions played before the "
               "game is cut", p["steps"], "a scripted game that never ends, played to the cap")


@resolver(r"^env\.(?P<name>n_games|split|n_train_games|train_split)$")
def _game_sets(t: Tracer, key, value, name):
    which = "held_out" if name in ("n_games", "split") else "train"
    split, n = game_sets(t.cfg)[which]
    return row(key, value, f"load_games(cfg, split, n) of the {which.replace('_', '-')} games (eval, optimize, "
               "the dry-run)", n if name.startswith("n_") else split)


@resolver(r"^env\.reasoning\.min_group_size$")
def _min_group(t: Tracer, key, value):
    low, high = environment(t.cfg).group_sizes(t.cfg)
    return row(key, value, "environment.group_sizes: the smallest |G| a training group is drawn with", low,
               f"groups of {low}-{high}")


@resolver(r"^eval\.max_error_rate$")
def _error_rate(t: Tracer, key, value):
    return row(key, value, "runner.run_arm(max_error_rate) via arms.arm_settings",
               arm_settings(t.cfg)["max_error_rate"])


# The launches whose held-out games go through evals/experiment._play_arm (skillos.evaluate's
# commands): only they play a game eval.trials times.
TRIAL_PATHS = ("eval", "quickstart", "sweep")


@resolver(r"^eval\.trials$")
def _trials(t: Tracer, key, value):
    if value > 1 and (t.training_launch or t.path not in TRIAL_PATHS):
        return not_used(key, value, f"the {t.path} launch plays each game once: eval.trials is read by "
                        f"{', '.join(TRIAL_PATHS)}")
    return row(key, value, "runner.run_arm(trials=) on the held-out games (evals/experiment._play_arm); each "
               "trial's sampling seed through backends.chat.SAMPLING_SEED", t.cfg.eval.trials, "read as configured")


@resolver(r"^eval\.control\.(?P<name>arm|max_age_days)$")
def _control(t: Tracer, key, value, name):
    where = ("the eval's comparisons (every arm against it) and compare's control"
             if name == "arm" else "evals/compare.control_problems: a control older than this is stale")
    return row(key, value, where, getattr(t.cfg.eval.control, name), "read as configured")


# the launch path: what each path runs, and the keys a path ignores ---------------------------------
@resolver(r"^compute\.watchdog$")
def _watchdog(t: Tracer, key, value):
    """Gate 7 is applied where a watchdog process is started: the training launch's plan on its
    path (local, accelerate, Modal), else skillos.api beside the launch (local or the Ray driver)."""
    if t.training_launch:
        p = t.launch_plan()
        spec, consumer = p.get("watchdog"), f"training/common/launch.launch: the watchdog beside the {p['backend']} launch"
    else:
        spec = launch_watch(t.cfg, ["OUT"], "a process beside the launch")
        consumer = f"skillos.api._watching: the watchdog beside the {t.ctx.command or 'launch'}"
    started = spec is not None
    return Row(key, value, consumer, bool(value) == started, " ".join(spec["command"]) if started else None,
               spec["where"] if started else "no watchdog process is started on this path")


LAUNCH_FLAGS = {"compute.num_machines": "--num_machines", "compute.machine_rank": "--machine_rank",
                "compute.main_process_ip": "--main_process_ip", "compute.main_process_port": "--main_process_port",
                "compute.deepspeed_config": "--deepspeed_config_file"}


@resolver(r"^compute\.(num_machines|machine_rank|main_process_ip|main_process_port|deepspeed_config)$")
def _launch_flag(t: Tracer, key, value):
    """A key only some launch paths read: applied where the launch command carries it, a FAIL on a
    path that ignores a value set away from its default (a DeepSpeed config a local launch never
    uses passes nothing)."""
    import dataclasses

    default = {f.name: f.default for f in dataclasses.fields(ComputeConfig)}[key.split(".", 1)[1]]
    path = t.path
    if value is None or value == default:
        return Row(key, value, f"the {path} launch", True, value, "the default: nothing to apply")
    flag = LAUNCH_FLAGS[key]
    command = [str(c) for c in t.launch_plan()["command"]] if t.training_launch else []
    if flag not in command:
        return Row(key, value, f"the {path} launch", False, None,
                   f"the {path} launch ignores it (only an accelerate{' or Modal' if 'deepspeed' in key else ''} "
                   "launch passes it on)")
    arrived = command[command.index(flag) + 1]
    if key == "compute.deepspeed_config":
        local = relative_to_config(t.cfg, value)
        return Row(key, value, f"the {path} launch: {flag}", Path(arrived).name == local.name, arrived)
    return row(key, value, f"the {path} launch: {flag}", type(value)(arrived))


RAY_COMMANDS = ("eval", "sweep")  # what compute.backend ray runs as tasks (evals/distributed.py)


@resolver(r"^compute\.backend$")
def _compute_backend(t: Tracer, key, value):
    if t.training_launch:
        return row(key, value, "training/common/launch.plan: the launch made", t.launch_plan()["backend"])

    entry = COMPUTE[value]
    ok = entry.in_process or (entry.distributes and t.path in RAY_COMMANDS)
    return Row(key, value, f"the {t.path} (skillos.api)", ok, value if ok else IN_PROCESS,
               "" if ok else f"the {t.path} runs in this process: compute.backend {value} is for "
               + ("training launches" if entry.trains else "evals and sweeps"))


@resolver(r"^compute\.(?P<name>ray_address|ray_max_retries|ray_gpus_per_task)$")
def _ray(t: Tracer, key, value, name):
    on_ray = compute_of(t.cfg).distributes and not t.training_launch and t.path in RAY_COMMANDS
    if on_ray:
        return Row(key, value, "evals/distributed: the cluster joined, each task's retries and resources", True, value)
    import dataclasses

    default = {f.name: f.default for f in dataclasses.fields(ComputeConfig)}[name]
    return Row(key, value, f"the {t.path} launch", value == default, None,
               "the default: nothing to apply" if value == default else
               f"the {t.path} launch is not on Ray (compute.backend {t.cfg.compute.backend}): it ignores it")


@resolver(r"^compute\.vllm_server_gpus$")
def _vllm_server_gpus(t: Tracer, key, value):
    command = [str(c) for c in t.launch_plan()["command"]] if t.training_launch else []
    if "--gpu_ids" in command:  # training takes the GPUs after the trl server's and the model servers'

        served = server_gpus(t.cfg) - t.cfg.compute.vllm_server_gpus
        first = int(command[command.index("--gpu_ids") + 1].split(",")[0])
        return row(key, value, f"the {t.path} launch: --gpu_ids (training after the server's GPUs"
                   + (f" and compute.servers' {served}" if served else "") + ")", first - served)
    return Row(key, value, f"the {t.path} launch", not value, None,
               "no vLLM server: nothing to reserve" if not value else
               f"the {t.path} launch starts no vLLM server: it ignores it")


# the gates' own inputs -------------------------------------------------------------------------
@resolver(r"^(reference|experiment\.\w+|compute\.(step_minutes|max_checkpoint_gap_minutes|gpu))$")
def _direct(t: Tracer, key, value):
    consumer = {
        "reference": "the gates: the table every row is diffed against",
    }.get(key, "the gates and the launch plan: a planning input read as configured")
    if key.startswith("experiment."):
        consumer = "the gates (mde, fix, optimize-power) and the ledger's experiment record: read as configured"
    return row(key, value, consumer, _get(t.cfg, key))


@resolver(r"^compute\.(?P<name>max_cost_usd|prompt_tokens_per_call|completion_tokens_per_call)$")
def _cost(t: Tracer, key, value, name):
    est = paid_estimate(t.cfg)
    if name == "max_cost_usd":
        arrived = est["max_cost_usd"]
    else:  # the tokens per call each paid section is costed at (completion: where it sets no max_tokens)
        field = "completion_tokens_per_call" if name.startswith("completion") else "prompt_tokens_per_call"
        costed = [r[field] for r in est["roles"] if name.startswith("prompt") or "max_tokens" not in r["completion_basis"]]
        arrived = costed[0] if costed else value  # no paid section uses it: the estimate reads it as configured
    return row(key, value, "the cost gate (api-cost) and the plan's paid API estimate (evals/prices.estimate)",
               arrived)


# -- the trace ---------------------------------------------------------------------------------------
LAUNCH_KEYS = ("backend", "num_processes", "num_machines", "machine_rank", "main_process_ip", "main_process_port",
               "deepspeed_config", "vllm_server_gpus", "ray_address", "ray_max_retries", "ray_gpus_per_task")


def launch_keys(cfg) -> list[str]:
    """The compute.* keys that say where a launch runs, set away from their defaults: traced
    whether or not a check read them, since a path that ignores one launches something else."""
    import dataclasses

    default = ComputeConfig()
    return [f"compute.{f.name}" for f in dataclasses.fields(ComputeConfig)
            if f.name in LAUNCH_KEYS and getattr(cfg.compute, f.name) != getattr(default, f.name)]


def trace(ctx: Context, results: list[Result]) -> list[Row]:
    tracer, rows = Tracer(ctx), []
    gated = gated_keys(ctx.cfg, results)
    for key in gated + [k for k in launch_keys(ctx.cfg) if k not in gated]:
        value = _get(ctx.cfg, key) if key not in DERIVED else None
        rows.append(_resolve(tracer, key, value))
    if tracer.refused:
        rows.append(Row("training", None, "the trainer's arguments", False, None, tracer.refused))
    return rows


def resolvers_for(cfg) -> list:
    """The resolvers asked for `cfg`'s keys, in order: its trainer's method's (skillos.registry.METHODS:
    the keys only that method's trainers read, or read their own way) and those of each method with
    no weight trainer (textopt: the keys of its own config section), then the gates' own."""
    methods = [m.trace for m in METHODS if m.trace and (not m.trainers or cfg.skillgate.trainer in m.trainers)]
    return [fn for module in (*methods, __name__) for fn in resolvers(module)]


def _resolve(tracer: Tracer, key: str, value) -> Row:
    for fn in resolvers_for(tracer.cfg):
        match = fn.trace_pattern.match(key)
        if not match:
            continue
        consumer = fn.__name__.strip("_").replace("_", " ")  # what a row says when its consumer is not built
        try:
            found = fn(tracer, key, value, **match.groupdict())
        except _Unverified as exc:
            return Row(key, value, consumer, None, None, str(exc))
        except ImportError as exc:
            return Row(key, value, consumer, None, None, f"not built here: {exc} (install the extra that provides it)")
        except Exception as exc:  # noqa: BLE001 - a consumer that cannot be built has not received it
            return Row(key, value, consumer, False, None,
                       f"the consumer could not be built: {type(exc).__name__}: {exc}"[:300])
        if found is not None:  # None: a method's resolver leaves the key to the next
            return found
    return Row(key, value, "none", False, None, "no consumer known for this key: a gate reads it, no code is "
               "traced receiving it")


def results_of(rows: list[Row]) -> list[Result]:
    """The trace as check results: one FAIL per key checked but not applied, one WARN per key
    whose consumer could not be built here, and a PASS line with the count."""
    out = []
    for traced in rows:
        if traced.applied is False and traced.key == "training":
            out.append(Result("trace", (1,), "FAIL", "training", None, "arguments the trainer accepts",
                              "a launch that dies building its trainer after the gates passed",
                              f"{traced.detail}; the launch would stop there"))
        elif traced.applied is False:
            out.append(Result("trace", (1,), "FAIL", traced.key, plain(traced.value), f"received by {traced.consumer}",
                              INCIDENT, f"checked but not applied: {traced.consumer} got {show(traced.arrived)}"
                              + (f" ({traced.detail})" if traced.detail else "")))
        elif traced.applied is None:
            out.append(Result("trace", (1,), "WARN", traced.key, plain(traced.value), "a consumer built here", INCIDENT,
                              f"unverified: {traced.detail}"))
    applied = sum(r.applied is True for r in rows)
    out.append(Result("trace", (1,), "PASS" if applied == len(rows) else "FAIL" if any(
        r.applied is False for r in rows) else "WARN", "gated keys", f"{applied} of {len(rows)} applied",
        f"{len(rows)} of {len(rows)}", INCIDENT,
        "every key a check read traced to the object it configures (gate check --trace lists them)"))
    return out
