"""A SkillsBench-style results registry, read for `skillos import`: one record per configuration
(model x harness), condition and task, `{task, model, modelShort, harness, family, condition: "No
Skills" | "With Skills", score, trials, passCount, perfectCount}`, where `score` is the mean
verifier reward x 100 over the task's trials (rewards in [0, 1]: partial credit exists),
`passCount` counts trials with reward > 0 and `perfectCount` trials with reward 1.

Each (configuration, condition) is one arm, its tasks the units, the configuration a member of the
family `compare --per-configuration` corrects over. The registry gives counts, not each trial's
reward, so the trials are rebuilt from them, and the import says so: `perfectCount` trials at 1,
`trials - passCount` at 0, and the `passCount - perfectCount` partial ones sharing what the score
leaves equally. The rebuilt trials average to the score exactly, which is all the per-unit test
reads (docs/units.md); a record whose counts cannot make its score (beyond the rounding of a
score given to one decimal) is a one-line error, never a guess.
"""

from __future__ import annotations

import math

from skillos.errors import SkillosError
from skillos.evals.imported import Arms, Trials, label

FIELDS = ("task", "model", "harness", "condition", "score", "trials", "passCount", "perfectCount")
ROUNDING = 0.0006  # a score given to one decimal is off by 0.05 points: 0.0005 of a trial's reward


def records_of(data):
    """The registry's records (a JSON list, or an object holding one under `results`), else None."""
    records = data.get("results") if isinstance(data, dict) else data
    if isinstance(records, list) and records and all(isinstance(r, dict) and set(FIELDS) <= set(r) for r in records):
        return records
    return None


def is_registry(data) -> bool:
    return records_of(data) is not None


def configuration(record: dict) -> str:
    return f"{record['model']} / {record['harness']}"


def rebuild_trials(score, trials, passed, perfect, where: str) -> list[float]:
    """The trials' rewards a record's counts allow (see the module docstring)."""
    for name, value in (("trials", trials), ("passCount", passed), ("perfectCount", perfect)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SkillosError(f"{where}: {name} {value!r} is not a count")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score) \
            or not 0 <= score <= 100:
        raise SkillosError(f"{where}: score {score!r} is not a mean reward x 100 in [0, 100]")
    if trials == 0 or not perfect <= passed <= trials:
        raise SkillosError(f"{where}: counts do not add up (perfectCount {perfect} <= passCount {passed} <= "
                           f"trials {trials}, trials >= 1)")
    mass = score / 100 * trials  # the rewards' sum
    partial = passed - perfect
    slack = ROUNDING * trials
    if partial == 0:
        if abs(mass - perfect) > slack:
            raise SkillosError(f"{where}: score {score:g} over {trials} trials is not {perfect} perfect and "
                               f"{trials - passed} zero trials")
        return [1.0] * perfect + [0.0] * (trials - passed)
    each = (mass - perfect) / partial
    if not -slack / partial < each < 1 + slack / partial:
        raise SkillosError(f"{where}: score {score:g} over {trials} trials cannot be {perfect} perfect, "
                           f"{partial} partial (0 < reward < 1) and {trials - passed} zero trials")
    each = min(max(each, 1e-9), 1 - 1e-9)  # the score's rounding, not a reward of 0 or 1
    return [1.0] * perfect + [each] * partial + [0.0] * (trials - passed)


def registry_games(path, data) -> Arms:
    """One arm per (configuration, condition) of a registry's records, each task its unit."""
    arms = Arms()
    for i, record in enumerate(records_of(data), 1):
        where = f"{path} record {i}"
        task = label(record["task"], "task", where)
        config = label(configuration(record), "configuration", where)
        condition = label(record["condition"], "condition", where)
        arm = f"{config} :: {condition}"
        units = arms.setdefault(arm, {})
        if task in units:
            raise SkillosError(f"{where}: task {task!r} appears twice for {config!r}, condition {condition!r}")
        rewards = rebuild_trials(record["score"], record["trials"], record["passCount"], record["perfectCount"], where)
        units[task] = Trials({str(k): r for k, r in enumerate(rewards)})
        arms.meta[arm] = {"configuration": config, "condition": condition, "family": record.get("family"),
                          "trials": "rebuilt from score, passCount and perfectCount (the registry gives no "
                                    "per-trial reward)"}
    return arms
