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
import math
from dataclasses import asdict
from functools import partial
from pathlib import Path

from skillos.config.derived import groups_per_step
from skillos.config.schema import Config
from skillos.evals.curation import CURATOR_INSTRUCTIONS
from skillos.training.common.grpo import (DESTROYED, SIGNALS, archive_callback, archived, build_args, crash_recorded,
                                         destroyed, fit, guarded, log_step_metrics, lora_config, policy_entropy,
                                         recorded_run)
from skillos.evals.arms import load_games
from skillos.evals.backends.tiny_model import resolve
from skillos.evals.backends.tool_format import for_training
from skillos.evals.curation import TOOL_SURFACES
from skillos.evals.envs.registry import environment
from skillos.evals.judge import make_judge
from skillos.training.common.prompt_cap import capped
from skillos.training.common.trl_compat import check
from skillos.training.common.warmup import WARMUP_RATE, curator_examples, format_warmup_steps, warm_up
from skillos.training.curator.async_rollouts import RELIES_ON, async_trainer
from skillos.training.curator.env import CuratorEnv, finish, make_setup, state_of
from skillos.training.curator.groups import build_groups
from skillos.training.curator.masks import left_out_line, masked_trainer, take_counts
from skillos.training.curator.reward import group_rewards, health, reward
from skillos.training.curator.rollouts import InFlight, phase_line, phase_stats, rollout_trainer

WARMUP_INPUTS = 6


def trainer_class(cfg: Config, gauge=None):
    """The GRPOTrainer subclass a curator run is built with: every rollout in flight, each playing
    its tool rounds on its own (training/curator/rollouts.py, training/curator/pipeline.py; a rollout with nothing
    left for TRL to call plays its unreached positions at once), prompts cut to
    training.max_prompt_length (training/common/prompt_cap.py), and the turn TRL generates after the
    last position left out of the loss (training/curator/masks.py)."""
    from trl import GRPOTrainer

    trainer = masked_trainer(rollout_trainer(cfg.training.rollout_concurrency, gauge, capped(GRPOTrainer),
                                             on_done=finish))
    if cfg.training.async_rollouts:  # the next batch plays while a step trains (training/curator/async_rollouts.py)

        check(names=RELIES_ON)
        trainer = async_trainer(trainer, cfg.training.max_staleness)
    return trainer


def dataset_rows(cfg: Config, games) -> list[dict]:
    """One row per group: the curator's prompt (reset appends the first task) and the group."""
    t = cfg.training
    # Each optimizer step consumes groups_per_step rows; twice what the run consumes keeps it
    # from repeating groups (TRL starts a new epoch if it runs out).
    per_step = math.ceil(groups_per_step(cfg) or 1)
    n_groups = (t.max_steps or 1) * per_step * 2

    env = environment(cfg)
    low, high = env.group_sizes(cfg)
    prompt = [{"role": "system", "content": env.curator_system},
              {"role": "user", "content": CURATOR_INSTRUCTIONS["curate_and_advance"] + "\n\n"}]
    groups = build_groups(games, high, n_groups, t.seed or 0, low if low != high else None, grouping=t.grouping,
                          curriculum=t.curriculum, consumed=(t.max_steps or 1) * per_step)
    return [{"prompt": prompt, **g.row()} for g in groups]


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
        """A copy that scores a batch made ahead (training/curator/async_rollouts.py) into a history of its own."""
        other = copy.copy(self)
        other.history, other.pending = list(self.history), None  # its length seeds a control's shuffle
        other.forked_at = len(self.history)
        return other

    def absorb(self, other: "RewardFunction", note: str = "") -> None:
        """What a fork scored, this function's now (the step that trains on its batch)."""
        self.history.extend(other.history[getattr(other, "forked_at", len(self.history)):])
        self.pending = other.pending + note if other.pending else other.pending

    def __call__(self, prompts, completions, environments=None, group=None, **_) -> list[float]:
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
                waited = owner.trainer.__dict__.pop("ahead_waited", None)  # training/curator/async_rollouts.py
                stats = phase_stats(list(windows), seconds, waited)
                windows.clear()
                entropy = policy_entropy(owner.trainer)
                left = take_counts(owner.trainer)
                if owner.reward_fn.history:
                    owner.reward_fn.history[-1].update(phase=stats, entropy=entropy, left_out=left)
                shown = f"{entropy:.3f}" if entropy is not None else "unmeasured (TRL logged none this step)"
                owner.echo(f"{line}; policy entropy {shown}; {phase_line(stats)}{left_out_line(left)}")
                if owner.reward_fn.history:
                    log_step_metrics(owner.trainer, owner.reward_fn.history[-1], stats)

        return _StepHealth()


def train(cfg: Config, ledger, echo=print, warmup: bool = True, signal: str = "real", games=None) -> dict:
    """Run GRPO for `cfg` (gates already passed); returns the run's summary. `signal` "shuffled" or "flipped"
    trains a negative control (rewards permuted within groups), for the learning canary only. `games`: the
    train pool its groups are drawn from (default: env.n_train_games of env.train_split; a canary's own
    choice of them)."""
    return guarded(cfg, echo, lambda out, cpu: _train(cfg, ledger, echo, warmup, out, cpu, signal, games))


def _train(cfg: Config, ledger, echo, warmup: bool, out: Path, cpu: bool, signal: str = "real", games=None) -> dict:
    if games is None:
        games = load_games(cfg, cfg.env.train_split, cfg.env.n_train_games)
    gauge = InFlight()
    setup = make_setup(cfg, games, gauge)
    try:
        return _train_on(setup, gauge, dataset_rows(cfg, games), cfg, ledger, echo, warmup, out, cpu, signal)
    finally:
        setup.close()  # the engine workers, if the setup has any, on every way out


def _train_on(setup, gauge, rows, cfg: Config, ledger, echo, warmup: bool, out: Path, cpu: bool, signal: str) -> dict:
    model = resolve(cfg.training.model)
    steps = format_warmup_steps(cfg)
    if warmup and steps:
        model = _warm(model, out, setup, rows, echo, steps, cfg.training.format_warmup_learning_rate or WARMUP_RATE)
    ledger, run_id = recorded_run(cfg, ledger)
    reward_fn = RewardFunction(cfg, make_judge(cfg.judge), echo, defer=True, signal=signal)
    with crash_recorded(ledger, run_id):
        from datasets import Dataset

        trainer_cls = trainer_class(cfg, gauge)
        step_health = StepHealth(reward_fn, echo)
        trainer = trainer_cls(
            model=model, reward_funcs=[reward_fn], args=build_args(cfg, cpu, model=model),
            train_dataset=Dataset.from_list(rows), peft_config=lora_config(cfg),
            processing_class=for_training(model),  # None: TRL's own; a template without tools: tool_format's
            environment_factory=partial(CuratorEnv, setup),
            callbacks=[step_health.callback(), archive_callback(cfg, ledger, run_id, echo)])
        step_health.trainer = trainer
    signal_ = fit(trainer, cfg, out, ledger, run_id, echo)
    summary = {"run_id": run_id, "output_dir": str(out), "checkpoints": archived(out), "steps": reward_fn.history,
               "signal": signal_}
    if cfg.training.async_rollouts:  # batches made ahead, made on-policy, discarded; staleness and wait per batch
        summary["async"] = getattr(trainer, "async_stats", None)
    return summary


def _warm(model: str, out: Path, setup, rows: list[dict], echo, steps: int, learning_rate: float) -> str:
    """A model that never emits a tool call on its own (the tiny one, a small real one): warm it up
    on the format, on the real first inputs of the first groups (the tiny model writes the call
    only for prompts like its warm-up's)."""

    target = out / "warmup"
    if not (target / "config.json").is_file():
        echo(f"warm-up: {steps} supervised steps on well-formed curate_and_advance calls")
        inputs = [CuratorEnv(setup).reset(**{k: v for k, v in row.items() if k != "prompt"})
                  for row in rows[:WARMUP_INPUTS]]
        system = rows[0]["prompt"][0]["content"]  # the environment's curator instructions
        warm_up(model, curator_examples(inputs, system), TOOL_SURFACES["curate_and_advance"], target,
                steps=steps, learning_rate=learning_rate, echo=echo)
    return str(target.resolve())  # adapters record their base by this path: absolute, so they load from anywhere


