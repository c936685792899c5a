"""`skillos train`: SkillOS Algorithm 1 with TRL's GRPOTrainer.

The curator (the model being trained) talks to `CuratorEnv` through its one tool,
`curate_and_advance`; the frozen executor plays each position on the real ALFWorld engine.
After a rollout the reward function plays the positions the curator never reached with the repo
frozen (`env.finish`), asks the judge about inserted/updated contents, and computes the
composite reward; an unmeasured rollout gets its group's mean (zero advantage). Every step
prints the reward-health line. Each saved checkpoint is marked with the tool surface it was
trained on, copied to `archive/` (so `save_total_limit` rotation cannot delete what a sweep
needs) and recorded in the ledger.

torch, transformers, trl and peft are imported inside functions: the CLI, the gates and a
Modal/accelerate dry run never need them.
"""

from __future__ import annotations

import copy
import json
import math
import shutil
from dataclasses import asdict
from functools import partial
from pathlib import Path

from skillos.config.derived import groups_per_step
from skillos.config.schema import Config
from skillos.errors import SkillosError
from skillos.evals.curation import CURATOR_INSTRUCTIONS, SURFACE_FILE
from skillos.registry import trainer_of

# TrainingConfig fields that are skillos's own, not GRPOConfig arguments. max_prompt_length is an
# argument: of SkillosGRPOConfig (training/prompt_cap.py), which applies it (TRL 1.16's has none).
NOT_GRPO = {"model", "output_dir", "group_size", "resume_from_checkpoint", "checkpoint_gb", "lora", "max_turn_tokens",
            "grouping", "curriculum",
            "rollout_concurrency", "max_signal_free_steps", "format_warmup_steps", "format_warmup_learning_rate",
            "async_rollouts", "max_staleness"}
WARMUP_STEPS = 240
WARMUP_RATE = 3e-3  # the tiny model's
WARMUP_INPUTS = 6


def grpo_kwargs(cfg: Config, cpu: bool) -> dict:
    """GRPOConfig arguments from `training.*`: every field the config sets, explicitly, plus
    what the multi-turn rollout needs. Nothing is left to a TRL default that Table 4 names."""
    t = cfg.training
    kwargs = {k: v for k, v in asdict(t).items() if k not in NOT_GRPO and v is not None}
    kwargs.update(
        output_dir=str(output_dir(cfg)),
        # |G| positions: reset plays the first, each curate_and_advance call one more.
        max_tool_calling_iterations=(t.group_size or 1) - 1,
        logging_steps=1, save_strategy="steps",
        remove_unused_columns=False,  # reset(**row) needs game_ids and task_type
    )
    if t.curriculum != "none" and trainer_of(cfg).curates:  # rows in the curriculum's order: read so
        kwargs["shuffle_dataset"] = False
    if t.max_turn_tokens:  # one response, not the rollout: the cap every generation call of a turn gets
        kwargs["generation_kwargs"] = {"max_tokens" if t.use_vllm else "max_new_tokens": t.max_turn_tokens}
    if cpu:
        kwargs.update(use_cpu=True, bf16=False)
    elif t.lora and t.bf16 is not False:  # a frozen LoRA base in bf16, not TRL's float32 default: half its memory
        kwargs.update(model_init_kwargs={"dtype": "bfloat16"})
    return kwargs


def args_spec(cfg: Config, cpu: bool, out: Path | None = None) -> tuple:
    """(class, keyword arguments) of the GRPO arguments the trainer is built with."""
    from skillos.training.prompt_cap import config_class

    return config_class(), grpo_kwargs(cfg, cpu)


def build_args(cfg: Config, cpu: bool, out: Path | None = None, extra: dict | None = None):
    """The GRPO arguments the trainer is built with (what `skillos gate check --trace` reads;
    `extra` adds arguments, e.g. use_cpu to build a GPU launch's arguments on a CPU machine)."""
    cls, kwargs = args_spec(cfg, cpu, out)
    return cls(**{**kwargs, **(extra or {})})


def trainer_class(cfg: Config, gauge=None):
    """The GRPOTrainer subclass a curator run is built with: every rollout in flight, each playing
    its tool rounds on its own (training/rollouts.py, training/pipeline.py; a rollout with nothing
    left for TRL to call plays its unreached positions at once) and prompts cut to
    training.max_prompt_length (training/prompt_cap.py)."""
    from trl import GRPOTrainer

    from skillos.training.env import finish
    from skillos.training.prompt_cap import capped
    from skillos.training.rollouts import rollout_trainer

    trainer = rollout_trainer(cfg.training.rollout_concurrency, gauge, capped(GRPOTrainer), on_done=finish)
    if cfg.training.async_rollouts:  # the next batch plays while a step trains (training/async_rollouts.py)
        from skillos.training.async_rollouts import RELIES_ON, async_trainer
        from skillos.training.trl_compat import check

        check(names=RELIES_ON)
        trainer = async_trainer(trainer, cfg.training.max_staleness)
    return trainer


def output_dir(cfg: Config) -> Path:
    from skillos.config.derived import training_output_dir

    return training_output_dir(cfg)


def dataset_rows(cfg: Config, games) -> list[dict]:
    """One row per group: the curator's prompt (reset appends the first task) and the group."""
    from skillos.training.groups import build_groups

    t = cfg.training
    # Each optimizer step consumes groups_per_step rows; twice what the run consumes keeps it
    # from repeating groups (TRL starts a new epoch if it runs out).
    per_step = math.ceil(groups_per_step(cfg) or 1)
    n_groups = (t.max_steps or 1) * per_step * 2
    from skillos.evals.envs.registry import environment

    env = environment(cfg)
    low, high = env.group_sizes(cfg)
    prompt = [{"role": "system", "content": env.curator_system},
              {"role": "user", "content": CURATOR_INSTRUCTIONS["curate_and_advance"] + "\n\n"}]
    groups = build_groups(games, high, n_groups, t.seed or 0, low if low != high else None, grouping=t.grouping,
                          curriculum=t.curriculum, consumed=(t.max_steps or 1) * per_step)
    return [{"prompt": prompt, **g.row()} for g in groups]


# what a run learns from: the real rewards, or a learning canary's negative controls
# (training/canary): shuffled within groups (nothing to learn) or sign-flipped (the opposite)
SIGNALS = ("real", "shuffled", "flipped")
DESTROYED = {"shuffled": "shuffled within groups", "flipped": "sign-flipped"}  # how each control's line says it


def destroyed(values: list, groups: list, seed: str, signal: str) -> list:
    """`values` (rewards, utilities) as a run with `signal` learns from them: as they are (real),
    permuted within each group (shuffled), or negated (flipped: what a trainer that follows its
    signal must then move away from). None and NaN stay unmeasured."""
    if signal == "shuffled":
        return shuffled_within_groups(values, groups, seed)
    if signal == "flipped":
        return [v if v is None else -v for v in values]
    return list(values)


def shuffled_within_groups(values: list, groups: list, seed: str) -> list:
    """`values` permuted within each group (seeded by hashlib): the same rewards, no longer tied
    to the completions that earned them, so nothing can be learned from them."""
    import hashlib
    import random

    out = list(values)
    for key in dict.fromkeys(groups):
        members = [i for i, k in enumerate(groups) if k == key]
        order = list(members)
        random.Random(hashlib.sha256(f"{seed}|{key}".encode()).hexdigest()).shuffle(order)
        for i, j in zip(members, order):
            out[i] = values[j]
    return out


class RewardFunction:
    """TRL reward function: finish each rollout, judge its contents, score it, print health.
    With `defer`, the health line waits in `pending` for `StepHealth` to print it at the end
    of the step, with the executor requests in flight and the rollout phase's share. With
    `signal` "shuffled" or "flipped" the rewards GRPO gets are permuted within each group or
    negated (a learning canary's negative controls); the history keeps the real ones."""

    __name__ = "curator_reward"

    def __init__(self, cfg: Config, judge, echo, defer: bool = False, signal: str = "real"):
        if signal not in SIGNALS:
            raise ValueError(f"signal {signal!r} is not one of {SIGNALS}")
        self.cfg, self.judge, self.echo, self.defer, self.signal = cfg, judge, echo, defer, signal
        self.history: list[dict] = []  # per step: the health numbers, mean reward, rollout rows
        self.pending: str | None = None

    def fork(self) -> "RewardFunction":
        """A copy that scores a batch made ahead (training/async_rollouts.py) into a history of its own."""
        other = copy.copy(self)
        other.history, other.pending = list(self.history), None  # its length seeds a control's shuffle
        other.forked_at = len(self.history)
        return other

    def absorb(self, other: "RewardFunction", note: str = "") -> None:
        """What a fork scored, this function's now (the step that trains on its batch)."""
        self.history.extend(other.history[getattr(other, "forked_at", len(self.history)):])
        self.pending = other.pending + note if other.pending else other.pending

    def __call__(self, prompts, completions, environments=None, group=None, **_) -> list[float]:
        from skillos.training.env import finish, state_of
        from skillos.training.reward import group_rewards, health, reward

        c = self.cfg
        # The positions the curators never reached, every rollout at once (up to
        # training.rollout_concurrency): each rollout owns its engine; executor calls overlap.
        from concurrent.futures import ThreadPoolExecutor

        workers = max(1, min(len(environments), c.training.rollout_concurrency or len(environments)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            rollouts = list(pool.map(finish, environments))
        if self.judge is not None and c.reward.lambda_cnt:
            for env, rollout in zip(environments, rollouts):
                rollout.verdicts = [self.judge.judge(text) for text in state_of(env).contents]
        # Each rollout is scored over its own group's |G| (reasoning draws it from a range).
        rewards = [reward(r, len(state_of(env).game_ids), c.reward.lambda_fc, c.reward.lambda_cnt,
                          c.reward.lambda_comp) for env, r in zip(environments, rollouts)]
        totals = [0.0] * len(rewards)
        # Groups by the dataset row: an unmeasured rollout takes the mean of its own group.
        keys = group if group is not None else list(range(len(rewards)))
        for key in dict.fromkeys(keys):
            members = [i for i, k in enumerate(keys) if k == key]
            for i, value in zip(members, group_rewards([rewards[i] for i in members])):
                totals[i] = value
        line = health(rewards, rollouts, keys)
        text = f"{line.line()}; mean reward {sum(totals) / len(totals):.3f}"
        given = destroyed(totals, keys, f"{c.training.seed}|{len(self.history)}", self.signal)
        if self.signal != "real":
            text += f"; rewards {DESTROYED[self.signal]} (negative control)"
        if self.defer:
            self.pending = text
        else:
            self.echo(text)
        rows = [{"group": k, "positions": r.positions, "ops_valid": r.ops_valid, "ops_total": r.ops_total,
                 "reward": total, "reward_given": g, "skills": [s.name for s in state_of(env).repo.skills]}
                for k, r, total, g, env in zip(keys, rollouts, totals, given, environments)]
        self.history.append({**asdict(line), "line": text, "mean_reward": sum(totals) / len(totals),
                             "r_fc": [r.r_fc for r in rewards], "r_task": [r.r_task for r in rewards],
                             "r_cnt": [r.r_cnt for r in rewards], "r_comp": [r.r_comp for r in rewards],
                             "rollouts": rows})
        return given


class StepHealth:
    """Prints the reward-health line at the end of each step that computed rewards, with the
    executor requests in flight during its rollout phase and that phase's share of the step."""

    def __init__(self, reward_fn: RewardFunction, echo):
        self.reward_fn, self.echo, self.trainer = reward_fn, echo, None
        self._started = None

    def callback(self):
        import time

        from transformers import TrainerCallback

        from skillos.training.rollouts import phase_line, phase_stats

        owner = self

        class _StepHealth(TrainerCallback):
            def on_step_begin(self, args, state, control, **kwargs):
                owner._started = time.perf_counter()

            def on_step_end(self, args, state, control, **kwargs):
                line, owner.reward_fn.pending = owner.reward_fn.pending, None
                if line is None:
                    return  # a step that reused an earlier generation batch
                seconds = time.perf_counter() - owner._started if owner._started else None
                windows = getattr(owner.trainer, "rollout_windows", [])
                waited = owner.trainer.__dict__.pop("ahead_waited", None)  # training/async_rollouts.py
                stats = phase_stats(list(windows), seconds, waited)
                windows.clear()
                entropy = policy_entropy(owner.trainer)
                if owner.reward_fn.history:
                    owner.reward_fn.history[-1].update(phase=stats, entropy=entropy)
                shown = f"{entropy:.3f}" if entropy is not None else "unmeasured (TRL logged none this step)"
                owner.echo(f"{line}; policy entropy {shown}; {phase_line(stats)}")
                if owner.reward_fn.history:
                    log_step_metrics(owner.trainer, owner.reward_fn.history[-1], stats)

        return _StepHealth()


def step_metrics(step: dict, phase: dict | None = None) -> dict:
    """The reward components and the reward-health numbers of one step (a RewardFunction history
    entry), by the names the step logs give them; a number with nothing measured is left out
    (TensorBoard shows a gap), never logged as 0."""
    def mean(values):
        measured = [v for v in values or [] if v is not None]
        return sum(measured) / len(measured) if measured else None

    values = {"reward/mean": step.get("mean_reward"), "reward/r_task": mean(step.get("r_task")),
              "reward/r_fc": mean(step.get("r_fc")), "reward/r_cnt": mean(step.get("r_cnt")),
              "reward/r_comp": mean(step.get("r_comp")), "health/task_share": step.get("task_share"),
              "health/positions_measured_median": step.get("measured_median"),
              "health/unmeasured_rollouts": step.get("neutralised"),
              "health/coerced_actions": step.get("coerced_actions")}
    for key in ("in_flight_mean", "in_flight_max", "rollout_share"):
        values[f"health/{key}"] = (phase or {}).get(key)
    return {k: float(v) for k, v in values.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def log_step_metrics(trainer, step: dict, phase: dict | None = None) -> None:
    """Into TRL's per-step metrics, so they reach every `training.report_to` beside TRL's own
    (reward, KL, entropy): GRPOTrainer.log averages and flushes them at the step's log."""
    metrics = getattr(trainer, "_metrics", None)
    if metrics is None:
        return
    for key, value in step_metrics(step, phase).items():
        metrics["train"][key].append(value)


def policy_entropy(trainer) -> float | None:
    """The mean per-token entropy of the policy's completions this step, as TRL computed it for
    the loss (None when it logged none: the step reused an earlier batch)."""
    values = getattr(trainer, "_metrics", {}).get("train", {}).get("entropy") or []
    return float(values[-1]) if values else None


def train(cfg: Config, ledger, echo=print, warmup: bool = True, signal: str = "real") -> dict:
    """Run GRPO for `cfg` (gates already passed); returns the run's summary. `signal` "shuffled" or "flipped"
    trains a negative control (rewards permuted within groups), for the learning canary only."""
    return guarded(cfg, echo, lambda out, cpu: _train(cfg, ledger, echo, warmup, out, cpu, signal))


def on_cpu(cfg: Config) -> bool:
    """Whether the trainer runs on the CPU (torch sees no CUDA device); a config that names no GPU
    on a process that sees one is refused here, before any weight moves (skillos/devices.py)."""
    import torch

    from skillos.devices import undeclared

    refused = undeclared(cfg, torch.cuda.device_count())
    if refused:
        raise SkillosError(f"{cfg.source or 'config'}: {refused}")
    return not torch.cuda.is_available()


def guarded(cfg: Config, echo, body) -> dict:
    """What every trainer does around its run: the output folder checked, a rerun of a finished
    run reported (never trained past max_steps), and the folder locked while one run writes it.
    `body(out, cpu)` trains and returns the summary."""
    check_report_to(cfg)
    cpu = on_cpu(cfg)
    out = output_dir(cfg)
    if out.exists() and not out.is_dir():
        raise SkillosError(f"training.output_dir: {out} is a file; an output folder is needed")
    out.mkdir(parents=True, exist_ok=True)
    finished = finished_checkpoint(cfg)
    if finished:  # a rerun of a finished run: report it, never train past max_steps
        echo(f"already finished: {finished} reached training.max_steps {cfg.training.max_steps}; nothing to train")
        return {"run_id": None, "output_dir": str(out), "checkpoints": archived(out), "steps": [],
                "finished": True, "finished_checkpoint": finished}
    if not is_main_process():
        return body(out, cpu)
    from skillos.safety import RunLock

    with RunLock(out):  # one training run per output folder
        return body(out, cpu)


# what each logging integration imports, and the extra that installs it
_REPORTERS = {"tensorboard": ("tensorboard", "skillos[train]"), "trackio": ("trackio", "trackio"),
              "wandb": ("wandb", "wandb")}


def check_report_to(cfg: Config) -> None:
    """A `training.report_to` whose package is missing is a one-line error before any model
    loads (transformers would raise mid-setup)."""
    import importlib.util

    for name in cfg.training.reporters():
        module, install = _REPORTERS.get(name, (None, None))
        if module and importlib.util.find_spec(module) is None:
            raise SkillosError(f"training.report_to: {name} is not installed (pip install {install}); "
                               "or set training.report_to=none")


def archived(out: Path) -> list[str]:
    """The archived checkpoints of a run, in step order (what a sweep evaluates)."""
    return [str(p) for p in sorted((out / "archive").glob("checkpoint-*"), key=_step) if _step(p) >= 0]


def fit(trainer, cfg: Config, out: Path, ledger, run_id, echo) -> dict:
    """Train from the newest complete checkpoint (or the one the config names) and end the
    ledger run as finished, crashed, interrupted or aborted. Every step's learning signal is read
    from TRL's log (training/signal.py); at GPU scale the launch aborts after
    training.max_signal_free_steps signal-free steps in a row. Returns the signal's verdict."""
    from skillos.training import signal

    watch = signal.for_run(cfg, echo, is_main_process())
    trainer.add_callback(watch.callback())
    try:
        resume = cfg.training.resume_from_checkpoint or newest_complete(out)
        if cfg.training.resume_from_checkpoint and not is_complete(Path(resume)):
            raise SkillosError(f"training.resume_from_checkpoint: {resume} is not a complete checkpoint "
                               "(trainer_state step and non-empty weights)")
        if resume:
            echo(f"resuming from {resume} (the newest complete checkpoint)")
        trainer.train(resume_from_checkpoint=resume)
    except BaseException as exc:
        if ledger is not None:
            ledger.end_experiment_run(run_id, "crashed" if not isinstance(exc, KeyboardInterrupt) else "interrupted",
                                      f"{type(exc).__name__}: {exc}"[:300])
        raise
    verdict = signal.conclude(watch, ledger, run_id, echo)
    if ledger is not None:
        ledger.end_experiment_run(run_id, "finished", verdict["line"])
    return verdict


def finished_checkpoint(cfg: Config) -> str | None:
    """The newest complete checkpoint if it is at (or past) training.max_steps, else None."""
    newest = newest_complete(output_dir(cfg)) if output_dir(cfg).is_dir() else None
    if newest and cfg.training.max_steps and _step(Path(newest)) >= cfg.training.max_steps \
            and not cfg.training.resume_from_checkpoint:
        return newest
    return None


def _train(cfg: Config, ledger, echo, warmup: bool, out: Path, cpu: bool, signal: str = "real") -> dict:
    from skillos.evals.arms import load_games
    from skillos.training.env import make_setup
    from skillos.training.rollouts import InFlight

    games = load_games(cfg, cfg.env.train_split, cfg.env.n_train_games)
    gauge = InFlight()
    setup = make_setup(cfg, games, gauge)
    try:
        return _train_on(setup, gauge, dataset_rows(cfg, games), cfg, ledger, echo, warmup, out, cpu, signal)
    finally:
        setup.close()  # the engine workers, if the setup has any, on every way out


def _train_on(setup, gauge, rows, cfg: Config, ledger, echo, warmup: bool, out: Path, cpu: bool, signal: str) -> dict:
    from skillos.ledger.experiments import record_experiment
    from skillos.evals.judge import make_judge
    from skillos.training.env import CuratorEnv
    from skillos.evals.backends.tiny_model import resolve
    from skillos.evals.backends.tool_format import for_training

    model = resolve(cfg.training.model)
    steps = format_warmup_steps(cfg)
    if warmup and steps:
        model = _warm(model, out, setup, rows, echo, steps, cfg.training.format_warmup_learning_rate or WARMUP_RATE)
    if not is_main_process():  # under accelerate every process trains; one records
        ledger = None
    run_id = None
    if ledger is not None:
        run_id = ledger.start_run(record_experiment(ledger, cfg), "train", config=cfg.to_dict(),
                                  seed=cfg.training.seed)
    reward_fn = RewardFunction(cfg, make_judge(cfg.judge), echo, defer=True, signal=signal)
    try:
        from datasets import Dataset

        trainer_cls = trainer_class(cfg, gauge)
        step_health = StepHealth(reward_fn, echo)
        trainer = trainer_cls(
            model=model, reward_funcs=[reward_fn], args=build_args(cfg, cpu),
            train_dataset=Dataset.from_list(rows), peft_config=lora_config(cfg),
            processing_class=for_training(model),  # None: TRL's own; a template without tools: tool_format's
            environment_factory=partial(CuratorEnv, setup),
            callbacks=[step_health.callback(), archive_callback(cfg, ledger, run_id, echo)])
        step_health.trainer = trainer
    except BaseException as exc:
        if ledger is not None:
            ledger.end_experiment_run(run_id, "crashed", f"{type(exc).__name__}: {exc}"[:300])
        raise
    signal_ = fit(trainer, cfg, out, ledger, run_id, echo)
    summary = {"run_id": run_id, "output_dir": str(out), "checkpoints": archived(out), "steps": reward_fn.history,
               "signal": signal_}
    if cfg.training.async_rollouts:  # batches made ahead, made on-policy, discarded; staleness and wait per batch
        summary["async"] = getattr(trainer, "async_stats", None)
    return summary


def is_main_process() -> bool:
    import os

    return int(os.environ.get("RANK", "0")) == 0


def format_warmup_steps(cfg: Config) -> int:
    """training.format_warmup_steps, its None read: WARMUP_STEPS for the tiny model, none for others."""
    from skillos.evals.backends.tiny_model import TINY_NAME

    steps = cfg.training.format_warmup_steps
    return (WARMUP_STEPS if cfg.training.model == TINY_NAME else 0) if steps is None else steps


def _warm(model: str, out: Path, setup, rows: list[dict], echo, steps: int, learning_rate: float) -> str:
    """A model that never emits a tool call on its own (the tiny one, a small real one): warm it up
    on the format, on the real first inputs of the first groups (the tiny model writes the call
    only for prompts like its warm-up's)."""
    from skillos.evals.curation import TOOL_SURFACES
    from skillos.training.env import CuratorEnv
    from skillos.training.warmup import curator_examples, warm_up

    target = out / "warmup"
    if not (target / "config.json").is_file():
        echo(f"warm-up: {steps} supervised steps on well-formed curate_and_advance calls")
        inputs = [CuratorEnv(setup).reset(**{k: v for k, v in row.items() if k != "prompt"})
                  for row in rows[:WARMUP_INPUTS]]
        system = rows[0]["prompt"][0]["content"]  # the environment's curator instructions
        warm_up(model, curator_examples(inputs, system), TOOL_SURFACES["curate_and_advance"], target,
                steps=steps, learning_rate=learning_rate, echo=echo)
    return str(target.resolve())  # adapters record their base by this path: absolute, so they load from anywhere


def lora_config(cfg: Config):
    """The LoRA adapter config of `training.lora` (None: full fine-tuning), for every trainer."""
    if not cfg.training.lora:
        return None
    from peft import LoraConfig

    try:
        return LoraConfig(task_type="CAUSAL_LM", **cfg.training.lora)
    except TypeError as exc:
        raise SkillosError(f"training.lora: {exc}") from exc


def newest_complete(out: Path) -> str | None:
    """The newest checkpoint whose trainer_state step matches its name and whose weights are
    non-empty; a checkpoint half-written when the run died is skipped, not resumed from."""
    for path in sorted(out.glob("checkpoint-*"), key=_step, reverse=True):
        if is_complete(path):
            return str(path)
    return None


def is_complete(path: Path) -> bool:
    state = path / "trainer_state.json"
    try:
        step = json.loads(state.read_text()).get("global_step")
    except (OSError, ValueError):
        return False
    weights = [p for p in path.glob("*.safetensors") if p.stat().st_size > 0]
    return step == _step(path) and bool(weights)


def _step(path: Path) -> int:
    try:
        return int(path.name.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return -1


def archive_callback(cfg, ledger, run_id, echo, surface: str = "curate_and_advance"):
    """The callback every trainer saves through. On every save: mark the checkpoint's tool surface,
    copy it to archive/, ledger it.
    Built on call: transformers (and torch) load only when training does."""
    from transformers import TrainerCallback

    from skillos.files import write_atomic

    class Archive(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            path = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if not path.is_dir() or not state.is_world_process_zero:
                return
            write_atomic(path / SURFACE_FILE, json.dumps({"tools": surface, "step": state.global_step,
                                                           "env": cfg.env.name}))
            archive = Path(args.output_dir) / "archive" / path.name
            if not archive.exists():
                partial_copy = archive.with_name(archive.name + ".partial")
                shutil.rmtree(partial_copy, ignore_errors=True)
                shutil.copytree(path, partial_copy)
                partial_copy.rename(archive)  # a copy cut short never looks like a checkpoint
            if ledger is not None:
                ledger.add_checkpoint(run_id, str(archive), state.global_step)
            echo(f"checkpoint {state.global_step}: {archive}")

    return Archive()
