"""The curator's composite reward (SkillOS):

    r = r_task + lambda_fc * r_fc + lambda_cnt * r_cnt + lambda_comp * r_comp

* r_task: executor successes over positions 2..|G| divided by (|G| - 1 - positions lost to
  infrastructure). Position 1 is played before the curator has written anything, so it does
  not score. A rollout must report every position: unreached ones are played with the repo
  frozen, so quitting after one success cannot raise the reward (a rollout short of |G|
  positions is refused, not scored).
* r_fc: valid operations / all operations.
* r_cnt: mean binary judge verdict over judged insert/update contents; a judge timeout or an
  unparseable verdict is dropped, not scored 0.
* r_comp: max(0, 1 - repo words / accumulated curator-input words).

A term with nothing to measure (no ops, no verdicts) is None and left out of the sum, never a 0.
A rollout with no measured position has no reward of its own: `group_rewards` gives it its
group's mean, so its advantage is zero and the unmeasured flag reaches the gradient.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field


@dataclass
class Rollout:
    """What one curator rollout produced, as the reward reads it."""

    positions: list  # outcome per position 1..|G|: True / False / None (lost to infrastructure)
    ops_valid: int = 0
    ops_total: int = 0
    verdicts: list = field(default_factory=list)  # judge verdicts: True / False / None
    repo_words: int = 0
    input_words: int = 0
    coerced_actions: int = 0


@dataclass
class Reward:
    total: float | None  # None: no measured position; group_rewards fills in the group mean
    r_task: float | None
    r_fc: float | None
    r_cnt: float | None
    r_comp: float | None
    measured: int  # positions 2..|G| measured
    denominator: int  # |G| - 1


class ShortRollout(ValueError):
    """A rollout reported fewer positions than its group has."""


def task_reward(positions: list, group_size: int) -> float | None:
    if len(positions) != group_size:
        raise ShortRollout(f"rollout reports {len(positions)} of {group_size} positions: unreached "
                           "positions must be played with the repo frozen, not dropped")
    measured = [p for p in positions[1:] if p is not None]
    return sum(bool(p) for p in measured) / len(measured) if measured else None


def reward(rollout: Rollout, group_size: int, lambda_fc: float, lambda_cnt: float,
           lambda_comp: float) -> Reward:
    r_task = task_reward(rollout.positions, group_size)
    r_fc = rollout.ops_valid / rollout.ops_total if rollout.ops_total else None
    judged = [v for v in rollout.verdicts if v is not None]
    r_cnt = sum(bool(v) for v in judged) / len(judged) if judged else None
    r_comp = max(0.0, 1 - rollout.repo_words / rollout.input_words) if rollout.input_words else None
    total = None
    if r_task is not None:
        total = r_task + sum(w * r for w, r in ((lambda_fc, r_fc), (lambda_cnt, r_cnt),
                                                (lambda_comp, r_comp)) if r is not None)
    measured = sum(p is not None for p in rollout.positions[1:])
    return Reward(total, r_task, r_fc, r_cnt, r_comp, measured, group_size - 1)


def group_rewards(rewards: list[Reward]) -> list[float]:
    """Totals for one GRPO group; an unmeasured rollout gets the group mean (zero advantage).
    A group with nothing measured gets all zeros: every advantage is zero, nothing is learned."""
    measured = [r.total for r in rewards if r.total is not None]
    mean = statistics.fmean(measured) if measured else 0.0
    return [r.total if r.total is not None else mean for r in rewards]


@dataclass
class Health:
    """The reward-health line: what the reward was computed from. Printed every step.

    `task_share`: the within-group share of reward variance that r_task supplies, i.e. how much of
    what GRPO compares comes from the executor's results rather than from format or compression
    terms. None (with `task_share_reason`) when the groups' rewards do not vary at all: that step
    has nothing to learn from, whatever the other numbers say."""

    rollouts: int
    denominator: int
    measured_median: float | None
    measured_min: int | None
    measured_max: int | None
    neutralised: int  # rollouts with no measured position, given the group mean
    coerced_actions: int
    task_share: float | None = None
    task_share_reason: str | None = None
    verdicts: int = 0  # judge verdicts asked this step (0: no judge ran, or it had nothing to judge)
    verdicts_unmeasured: int = 0  # of them, calls that failed or replies that did not parse (left out of r_cnt)

    def line(self) -> str:
        if self.measured_median is None:
            return f"reward health: no rollouts (0 of {self.rollouts})"
        share = (f"r_task supplies {self.task_share:.0%} of within-group reward variance"
                 if self.task_share is not None else f"r_task share unmeasured ({self.task_share_reason})")
        return (f"reward health: positions measured median {self.measured_median:g} "
                f"(min {self.measured_min}, max {self.measured_max}) of {self.denominator} "
                f"over {self.rollouts} rollouts; {self.neutralised} unmeasured rollouts "
                f"neutralised; {self.coerced_actions} actions coerced; {share}"
                + (f"; judge verdicts unmeasured {self.verdicts_unmeasured} of {self.verdicts}" if self.verdicts else ""))


def task_share(rewards: list[Reward], groups: list) -> tuple[float | None, str | None]:
    """(share, reason): r_task's share of the within-group variance of the total reward,
    cov(r_task, total) / var(total) pooled over groups (the components' shares sum to 1), over
    rollouts with both measured; None with the reason when the totals do not vary."""
    task = total = 0.0
    for key in dict.fromkeys(groups):
        members = [r for r, k in zip(rewards, groups) if k == key and r.total is not None and r.r_task is not None]
        if len(members) < 2:
            continue
        mean_task = statistics.fmean(r.r_task for r in members)
        mean_total = statistics.fmean(r.total for r in members)
        task += sum((r.r_task - mean_task) * (r.total - mean_total) for r in members)
        total += sum((r.total - mean_total) ** 2 for r in members)
    if total == 0:
        return None, "no within-group reward variance: this step has nothing to learn from"
    return task / total, None


def health(rewards: list[Reward], rollouts: list[Rollout], groups: list | None = None) -> Health:
    counts = [r.measured for r in rewards]
    share, reason = task_share(rewards, groups if groups is not None else [0] * len(rewards))
    return Health(
        rollouts=len(rewards), denominator=rewards[0].denominator if rewards else 0,
        measured_median=statistics.median(counts) if counts else None,
        measured_min=min(counts) if counts else None, measured_max=max(counts) if counts else None,
        neutralised=sum(r.total is None for r in rewards),
        coerced_actions=sum(r.coerced_actions for r in rollouts), task_share=share, task_share_reason=reason,
        verdicts=sum(len(r.verdicts) for r in rollouts),
        verdicts_unmeasured=sum(v is None for r in rollouts for v in r.verdicts))
