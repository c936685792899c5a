"""The GRPO base every weight trainer shares (the curator's and the selector's): TRL's GRPO
arguments from `training.*`, the output folder and its lock, the device check, the learning
signal a canary's negative controls destroy, the per-step metrics, resuming from the newest
complete checkpoint, and the callback every trainer saves through (archive/, the ledger).

torch, transformers, trl and peft are imported inside functions: the CLI, the gates and a
Modal/accelerate dry run never need them.
"""

from __future__ import annotations

import json
import shutil
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

from skillos.config.schema import Config
from skillos.errors import SkillosError
from skillos.evals.curation import SURFACE_FILE
from skillos.evals.backends import windowed_attention
from skillos.config.derived import training_output_dir
from skillos.devices import undeclared
from skillos.files import write_atomic
from skillos.ledger.experiments import record_experiment
from skillos.safety import RunLock
from skillos.training.common import signal
from skillos.training.common.prompt_cap import config_class


# TrainingConfig fields that are skillos's own, not GRPOConfig arguments. max_prompt_length is an
# argument: of SkillosGRPOConfig (training/common/prompt_cap.py), which applies it (TRL 1.16's has none).
NOT_GRPO = {"model", "output_dir", "group_size", "resume_from_checkpoint", "checkpoint_gb", "lora", "max_turn_tokens",
            "grouping", "curriculum", "max_instructions",
            "rollout_concurrency", "max_signal_free_steps", "format_warmup_steps", "format_warmup_learning_rate",
            "async_rollouts", "max_staleness"}


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
    if t.curriculum != "none":  # rows in the curriculum's order: read so (a trainer that plays none drops it)
        kwargs["shuffle_dataset"] = False
    if t.max_turn_tokens:  # one response, not the rollout: the cap every generation call of a turn gets
        kwargs["generation_kwargs"] = {"max_tokens" if t.use_vllm else "max_new_tokens": t.max_turn_tokens}
    if cpu:
        kwargs.update(use_cpu=True, bf16=False)
    elif t.lora and t.bf16 is not False:  # a frozen LoRA base in bf16, not TRL's float32 default: half its memory
        kwargs.update(model_init_kwargs={"dtype": "bfloat16"})
    return kwargs


def loading(kwargs: dict, model: str | None) -> dict:
    """GRPO arguments plus what loading `model` (the folder the trainer is handed) needs: the blocked
    attention where its layers attend to a window (evals/backends/windowed_attention.py). TRL loads
    the policy and its reference model with model_init_kwargs."""
    attention = windowed_attention.load_kwargs(model)
    if not attention:
        return kwargs
    return {**kwargs, "model_init_kwargs": {**(kwargs.get("model_init_kwargs") or {}), **attention}}


def args_spec(cfg: Config, cpu: bool, out: Path | None = None) -> tuple:
    """(class, keyword arguments) of the GRPO arguments the trainer is built with."""
    return config_class(), grpo_kwargs(cfg, cpu)


def build_args(cfg: Config, cpu: bool, out: Path | None = None, extra: dict | None = None, model: str | None = None):
    """The GRPO arguments the trainer is built with (what `skillos gate check --trace` reads;
    `extra` adds arguments, e.g. use_cpu to build a GPU launch's arguments on a CPU machine;
    `model`: the folder the trainer loads, where it is known)."""
    cls, kwargs = args_spec(cfg, cpu, out)
    return cls(**loading({**kwargs, **(extra or {})}, model))


def output_dir(cfg: Config) -> Path:
    return training_output_dir(cfg)


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


def on_cpu(cfg: Config) -> bool:
    """Whether the trainer runs on the CPU (torch sees no CUDA device); a config that names no GPU
    on a process that sees one is refused here, before any weight moves (skillos/devices.py)."""
    import torch

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


def recorded_run(cfg: Config, ledger) -> tuple:
    """(the ledger this process records in, its run's id): under accelerate every process trains and
    the main one records; (None, None) in the others and without a ledger."""
    if ledger is None or not is_main_process():
        return None, None
    return ledger, ledger.start_run(record_experiment(ledger, cfg), "train", config=cfg.to_dict(),
                                    seed=cfg.training.seed)


@contextmanager
def crash_recorded(ledger, run_id):
    """The block (a trainer being built, or training) failing ends the ledger run and its experiment
    as crashed, or interrupted on Ctrl-C or a SIGTERM (cli_common.end_on_sigterm raises SystemExit), its
    exception in one line, before the exception goes on."""
    try:
        yield
    except BaseException as exc:
        if ledger is not None:
            stopped = isinstance(exc, (KeyboardInterrupt, SystemExit))
            ledger.end_experiment_run(run_id, "interrupted" if stopped else "crashed",
                                      f"{type(exc).__name__}: {exc}"[:300])
        raise


def fit(trainer, cfg: Config, out: Path, ledger, run_id, echo) -> dict:
    """Train from the newest complete checkpoint (or the one the config names) and end the
    ledger run as finished, crashed, interrupted or aborted. Every step's learning signal is read
    from TRL's log (training/common/signal.py); at GPU scale the launch aborts after
    training.max_signal_free_steps signal-free steps in a row. Returns the signal's verdict."""
    watch = signal.for_run(cfg, echo, is_main_process())
    trainer.add_callback(watch.callback())
    with crash_recorded(ledger, run_id):
        resume = cfg.training.resume_from_checkpoint or newest_complete(out)
        if cfg.training.resume_from_checkpoint and not is_complete(Path(resume)):
            raise SkillosError(f"training.resume_from_checkpoint: {resume} is not a complete checkpoint "
                               "(trainer_state step and non-empty weights)")
        if resume:
            echo(f"resuming from {resume} (the newest complete checkpoint)")
        trainer.train(resume_from_checkpoint=resume)
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


def is_main_process() -> bool:
    import os

    return int(os.environ.get("RANK", "0")) == 0


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
