"""Anthropic skill-creator's `benchmark.json`, read and written, so its users get skillos's paired
statistics and skillos's runs open in its viewer.

The format (skill-creator's references/schemas.md): `metadata`, `runs[]` (one per run: `eval_id`,
`eval_name`, `configuration` with_skill | without_skill, or new_skill | old_skill when improving a
skill, `run_number`, `result{pass_rate, passed, failed, total, time_seconds, tokens, tool_calls,
errors}`, `expectations[{text, passed, evidence}]`, `notes[]`), `run_summary` per configuration
(`pass_rate`, `time_seconds`, `tokens` as mean/stddev/min/max, and a `delta` of signed strings) and
`notes[]`.

Reading (`skillos import benchmark.json`): each configuration is an arm; a unit is one eval,
paired across arms by eval_id, its runs its trials (docs/units.md), each scored by its pass_rate
(`unit: pass_rate`, the default), by whether all its expectations passed (`unit: run`; without
expectations: passed == total > 0), or with each expectation a trial (`unit: expectation`). The
runs and expectations of one eval are one cluster, never independent units. A run with errors is
unmeasured, never a failure: a billing limit that hit one arm is not that arm losing. Writing (`skillos export skill-creator RUN OUT`): one run per
held-out game per arm (a run per trial, `run_number` the trial's, where games were played several
times: eval.trials), the control arm as without_skill; what skillos did not measure (wall time,
tokens) is null, never 0, and the paired comparison is in the top-level notes.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

from skillos.errors import SkillosError
from skillos.evals.records import row_trials
from skillos.evals.units import Arms, Trials
from skillos.config.eval import EvalConfig
from skillos.evals import stats
from skillos.evals.run_folder import held_out_rows, outcomes_by_arm, recorded_config, two_arms
from skillos.files import write_atomic

CONFIGURATIONS = ("with_skill", "without_skill", "new_skill", "old_skill")  # what the viewer groups on
# What one trial of an eval scores when a benchmark is imported: the run's pass_rate (the share of
# its expectations that passed), the run as a whole (all passed: 1, else 0), or each expectation.
# The unit is always the eval: its runs and expectations are not independent of one another.
UNITS = ("pass_rate", "run", "expectation")
RESULT_KEYS = ("pass_rate", "passed", "failed", "total", "time_seconds", "tokens", "tool_calls", "errors")
SUMMARY_KEYS = ("pass_rate", "time_seconds", "tokens")
WON = "The game is won within the step limit"  # the one expectation a skillos game carries


def is_benchmark(data) -> bool:
    """Whether parsed JSON is a skill-creator benchmark (runs that name their configuration)."""
    runs = data.get("runs") if isinstance(data, dict) else None
    return isinstance(runs, list) and bool(runs) and all(isinstance(r, dict) and "configuration" in r for r in runs)


def _count(value, where: str, key: str):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise SkillosError(f"{where}: result.{key} {value!r} is not a count")
    return value


def _run_success(run: dict, where: str) -> tuple:
    """(each expectation's passed, None when the run errored; the run's error count; its result)."""
    result = run.get("result")
    if not isinstance(result, dict):
        raise SkillosError(f"{where}: no result object (skill-creator nests pass_rate, passed, total and errors "
                           "under result)")
    expectations = run.get("expectations") or []
    if not isinstance(expectations, list) or not all(isinstance(e, dict) for e in expectations):
        raise SkillosError(f"{where}: expectations is not a list of {{text, passed, evidence}}")
    passed = []
    for i, e in enumerate(expectations, 1):
        if not isinstance(e.get("passed"), bool):
            raise SkillosError(f"{where}: expectation {i} passed {e.get('passed')!r} is not true or false")
        passed.append(e["passed"])
    for key in ("passed", "failed", "total", "tool_calls", "tokens", "time_seconds"):
        _count(result.get(key), where, key)  # a NaN or negative count is an error wherever it is
    errors = _count(result.get("errors"), where, "errors")
    return [None if errors else p for p in passed], errors, result


def units(run: dict, where: str, unit: str) -> dict:
    """{unit suffix: success} of one run: {"": ...} for the run, {"exp-I": ...} per expectation."""
    passed, errors, result = _run_success(run, where)
    if unit == "expectation":
        if not passed and errors:  # it errored before any expectation was graded: one unmeasured unit
            return {"exp-unmeasured": None}
        if not passed:
            raise SkillosError(f"{where}: no expectations[] to count as units (import with --unit run)")
        return {f"exp-{i}": p for i, p in enumerate(passed, 1)}
    if errors:
        return {"": None}
    if passed:
        return {"": all(passed)}
    share = _checked_share(result, where)
    return {"": None if share is None else share == 1}


def _checked_share(result: dict, where: str) -> float | None:
    """passed / total of a run's result; None when nothing was checked (unmeasured, not a failure)."""
    total, ok = _count(result.get("total"), where, "total"), _count(result.get("passed"), where, "passed")
    if not total or ok is None:
        return None
    if ok > total:
        raise SkillosError(f"{where}: result.passed {ok} is above result.total {total}")
    return ok / total


def trial_scores(run: dict, where: str, unit: str) -> dict:
    """{trial suffix: score} of one run: its pass_rate ({"": 0.5}), its all-passed outcome
    ({"": True}), or each expectation ({"exp-I": ...}); an errored run's are unmeasured (None)."""
    if unit != "pass_rate":
        return units(run, where, unit)
    _, errors, result = _run_success(run, where)
    if errors:
        return {"": None}
    rate = result.get("pass_rate")
    if rate is not None:
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise SkillosError(f"{where}: result.pass_rate {rate!r} is not a share in [0, 1]")
        return {"": float(rate)}
    return {"": _checked_share(result, where)}


def benchmark_games(path: Path, data: dict, unit: str) -> dict:
    """arm (the configuration) -> {eval-ID: its trials} of a parsed benchmark.json: each eval is
    one unit, paired across arms by its id, its runs (and with `unit` expectation, each run's
    expectations) its trials, scored as `unit` says (UNITS). Runs and expectations of one eval
    are one cluster: testing them as independent units would count one eval's luck many times."""
    if unit not in UNITS:
        raise SkillosError(f"--unit {unit!r}: one of {', '.join(UNITS)}")
    games, expectations = Arms(), {}
    for i, run in enumerate(data["runs"], 1):
        where = f"{path} runs[{i - 1}]"
        config, eval_id, number = run.get("configuration"), run.get("eval_id"), run.get("run_number", 1)
        if not isinstance(config, str) or not config:
            raise SkillosError(f"{where}: configuration {config!r} is not a name ({' | '.join(CONFIGURATIONS)})")
        if eval_id is None or isinstance(eval_id, (bool, dict, list)):
            raise SkillosError(f"{where}: eval_id {eval_id!r} is not an id")
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            raise SkillosError(f"{where}: run_number {number!r} is not 1, 2, 3...")
        trials = games.setdefault(config, {}).setdefault(f"eval-{eval_id}", Trials())
        for suffix, score in trial_scores(run, where, unit).items():
            key = f"run-{number}" + (f"/{suffix}" if suffix else "")
            if key in trials:
                raise SkillosError(f"{where}: eval {eval_id} run {number} appears twice for {config!r}")
            trials[key] = score
        passed, errors, _ = _run_success(run, where)
        seen = expectations.setdefault(config, [0, 0])
        if not errors:
            seen[0], seen[1] = seen[0] + sum(p is True for p in passed), seen[1] + len(passed)
        elif all(v is None for v in trials.values()):  # every trial of the eval so far errored
            games.reasons.setdefault(config, {})[f"eval-{eval_id}"] = f"errored (result.errors {errors:g})"
    for config, evals in games.items():
        passed, total = expectations.get(config, (0, 0))
        games.meta[config] = {
            "unit": "eval", "trial": {"pass_rate": "a run, scored by its pass_rate", "run": "a run, 1 when all its "
                                      "expectations passed", "expectation": "an expectation of a run"}[unit],
            "cluster": f"{len(evals)} evals; their runs and expectations are trials of one unit, never units",
            "expectations_passed": f"{passed}/{total} (descriptive: expectations of one eval are not independent)"}
    return games


# -- writing -------------------------------------------------------------------------------------
def _spread(values: list) -> dict:
    """mean, stddev, min, max of the measured values (at least one)."""
    return {"mean": round(statistics.fmean(values), 4),
            "stddev": round(statistics.stdev(values), 4) if len(values) > 1 else 0.0,
            "min": min(values), "max": max(values)}


def _result(score: float | None, tool_calls) -> dict:
    """One run's result from its score in [0, 1] (1 won, 0 lost; None unmeasured: an error)."""
    return {"pass_rate": score, "passed": int(score == 1.0), "failed": int(score is not None and score < 1.0),
            "total": int(score is not None), "time_seconds": None, "tokens": None,
            "tool_calls": tool_calls, "errors": int(score is None)}


def _runs(row: dict, eval_id: int, configuration: str) -> list[dict]:
    """A game's runs: one, or one per trial (eval.trials: `run_number` the trial's, 1, 2, 3...)."""
    plays = row_trials(row)
    evidence = (f"{row.get('steps')} steps{' over its trials' if len(plays) > 1 else ''}, "
                f"{row.get('coerced_actions', 0)} coerced actions; skills retrieved: "
                f"{', '.join(row.get('skills_retrieved') or []) or 'none'}")
    game = f"skillos game {row['game_id']} ({row.get('task_type') or 'no task type'}), arm {row.get('arm')}"
    return [{"eval_id": eval_id, "eval_name": row.get("task") or row["game_id"], "configuration": configuration,
             "run_number": k, "result": _result(won, row.get("steps") if len(plays) == 1 else None),
             "expectations": [{"text": WON, "passed": won == 1.0, "evidence": evidence}] if won is not None else [],
             "notes": [game + (f", trial {k} of {len(plays)}" if len(plays) > 1 else "")]
             + ([] if won is not None else [f"unmeasured: {row.get('unmeasured_reason') or 'no outcome recorded'}"])}
            for k, won in enumerate(plays, 1)]


def export_benchmark(run_dir: Path, out: Path, treatment: str | None = None, control: str | None = None) -> dict:
    """Write RUN_DIR's held-out games as skill-creator's benchmark.json at OUT (a .json file, or
    a folder that gets benchmark.json): `treatment` as with_skill, `control` as without_skill."""
    import datetime as dt

    run_dir, out = Path(run_dir), Path(out)
    target = out if out.suffix == ".json" else out / "benchmark.json"
    rows = held_out_rows(run_dir)
    treatment, control = two_arms(run_dir, sorted({r['arm'] for r in rows}), treatment, control)
    by_arm = {arm: {r["game_id"]: r for r in rows if r["arm"] == arm} for arm in (treatment, control)}
    ids = {g: i for i, g in enumerate(sorted(set(by_arm[treatment]) | set(by_arm[control])), 1)}
    named = {treatment: "with_skill", control: "without_skill"}
    runs = [run for arm in (treatment, control) for g, row in sorted(by_arm[arm].items())
            for run in _runs(row, ids[g], named[arm])]
    outcomes = outcomes_by_arm(rows)
    defaults = EvalConfig()
    paired = stats.compare_units(outcomes[control], outcomes[treatment], names=(treatment, control),
                                 alpha=defaults.alpha, power=defaults.power, n_boot=defaults.bootstrap)
    summary = {}
    for arm, name in named.items():
        rates = [r["result"]["pass_rate"] for r in runs if r["configuration"] == name and r["result"]["errors"] == 0]
        # what skillos did not measure is null, not an object of nulls (the viewer hides a null row)
        summary[name] = {key: _spread(rates) if key == "pass_rate" and rates else None for key in SUMMARY_KEYS}
    means = [(summary[n]["pass_rate"] or {}).get("mean") for n in ("with_skill", "without_skill")]
    summary["delta"] = {"pass_rate": None if None in means else f"{means[0] - means[1]:+.2f}",
                        "time_seconds": None, "tokens": None}
    unmeasured = {name: sum(r["result"]["errors"] for r in runs if r["configuration"] == name) for name in named.values()}
    p = paired.p_value
    means = {arm: stats.mean_score(outcomes[arm].values()) for arm in (treatment, control)}  # each game's trials first
    benchmark = {
        "metadata": {"skill_name": (recorded_config(run_dir).get("experiment") or {}).get("name") or run_dir.name, "skill_path": str(run_dir.resolve()),
                     "executor_model": None, "analyzer_model": None,
                     "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                     "evals_run": sorted(ids.values()),
                     "runs_per_configuration": max(r["run_number"] for r in runs)},
        "runs": runs, "run_summary": summary,
        "notes": [f"skillos arms: with_skill is {treatment}, without_skill is {control} (the control), on the same "
                  f"{len(ids)} held-out games",
                  f"skillos paired comparison over {paired.n_paired} games measured in both arms ({paired.n_dropped} "
                  f"left out{'; a game is one unit, its runs its trials' if paired.test == 'wilcoxon' else ''}): "
                  f"{'games up/down' if paired.test == 'wilcoxon' else 'b/c'} {paired.b}/{paired.c}, "
                  f"{stats.test_name(paired.test)} p "
                  + ("unmeasured" if p is None else f"{p:.3g}")
                  + ("" if paired.ci_low is None else f", 95% CI [{paired.ci_low:+.3f}, {paired.ci_high:+.3f}]"),
                  f"unmeasured runs (errors, never counted as failures): with_skill {unmeasured['with_skill']}, "
                  f"without_skill {unmeasured['without_skill']}",
                  "time_seconds and tokens are null: skillos did not measure them for these games"]
        + ([f"run_summary averages runs, as skill-creator does; skillos's mean score averages each game's trials "
            f"first (with_skill {means[treatment]:.3f}, without_skill {means[control]:.3f}, report.json): the test "
            "is over games"] if paired.test == "wilcoxon" and None not in means.values() else [])}
    write_atomic(target, json.dumps(benchmark, indent=2, allow_nan=False))
    return {"out": str(target), "runs": len(runs), "evals": len(ids), "with_skill": treatment, "without_skill": control,
            "unmeasured": unmeasured, "p_value": None if p is None or math.isnan(p) else p,
            "b": paired.b, "c": paired.c, "test": paired.test}
