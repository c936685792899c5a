"""A SkillsBench-style results registry, read for `skillos import`: one record per configuration
(model x harness), condition and task, `{task, model, modelShort, harness, family, condition: "No
Skills" | "With Skills", score, trials, passCount, perfectCount}`, where `score` is the mean
verifier reward x 100 over the task's trials (rewards in [0, 1]: partial credit exists),
`passCount` counts trials with reward > 0 and `perfectCount` trials with reward 1.

Each (configuration, condition) is one arm, its tasks the units, the configuration a member of the
family `compare --per-configuration` corrects over. The registry gives counts, not each trial's
reward, so the trials are rebuilt from them, and the import says so: `perfectCount` trials at 1,
`trials - passCount` at 0, and the `passCount - perfectCount` partial ones sharing what the score
leaves equally. With a partial trial the rebuilt trials average to the score; without one, to
perfectCount / trials, which the score rounds (33.3 for 1 of 3), so `compare --per-configuration`
takes tasks closer than that rounding as ties. A record whose counts cannot make its score (beyond
the rounding of a score given to one decimal) is a one-line error, never a guess.
"""

from __future__ import annotations

import math

from skillos.errors import SkillosError
from skillos.evals.units import Arms, Trials, label

FIELDS = ("task", "model", "harness", "condition", "score", "trials", "passCount", "perfectCount")
ROUNDING = 0.0006  # a score given to one decimal is off by 0.05 points: 0.0005 of a trial's reward


def records_of(data):
    """The registry's records (a JSON list, or an object holding one under `results`), else None."""
    records = data.get("results") if isinstance(data, dict) else data
    return records if isinstance(records, list) else None


def looks_like_registry(data) -> bool:
    """Whether a JSON file is meant as a registry (an empty list, or records naming a task and
    a condition), so that one with a record short of a field gets this reader's error."""
    records = records_of(data)
    return records is not None and (not records or any(
        isinstance(r, dict) and {"task", "condition"} <= set(r) for r in records))


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
    arms, named = Arms(), {}
    records = records_of(data)
    if not records:
        raise SkillosError(f"{path}: a results registry with no records")
    for i, record in enumerate(records, 1):
        where = f"{path} record {i}"
        missing = [f for f in FIELDS if not isinstance(record, dict) or f not in record]
        if missing:
            raise SkillosError(f"{where}: not a registry record (no {', '.join(missing)}; a record has "
                               f"{', '.join(FIELDS)})")
        task = label(record["task"], "task", where)
        config = label(configuration(record), "configuration", where)
        pair = (label(record["model"], "model", where), label(record["harness"], "harness", where))
        if named.setdefault(config, pair) != pair:  # "a / b" + "c" and "a" + "b / c" read alike
            raise SkillosError(f"{where}: model {pair[0]!r} with harness {pair[1]!r} and model {named[config][0]!r} "
                               f"with harness {named[config][1]!r} both read as configuration {config!r}")
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
