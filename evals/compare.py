"""Compare recorded runs against a control, from the ledger, and refuse to call a difference an
improvement unless it is one.

An arm's difference is an improvement only when all of these hold:
* the control is contemporaneous (gate 4): measured within `max_age_days` of now, on the same
  executor fingerprint as the arm;
* the arms' denominators agree: the same held-out games were attempted by every arm;
* it is positive and significant after Holm correction over the *family*: every run recorded
  in the ledger under the same experiments as the compared arms (so comparing one arm at a
  time cannot shrink the family);
and the MDE is always printed beside it (gate 5). Pairs where either side is unmeasured drop
out of the test and are counted.
"""

from __future__ import annotations

import datetime as dt
import json

from skillos.evals import stats
from skillos.evals.records import row_outcome
from skillos.evals.runner import MIN_GAMES_FOR_ABORT
from skillos.evals.verify import run_rows
from skillos.ledger.store import Ledger, LedgerError


def _age_days(run: dict, now: dt.datetime) -> float:
    started = dt.datetime.fromisoformat(run["started_at"])
    if started.tzinfo is None:
        started = started.replace(tzinfo=dt.timezone.utc)
    return (now - started).total_seconds() / 86400


def control_problems(control: dict, arm: dict, max_age_days: float, now: dt.datetime) -> list[str]:
    """Gate 4's rule for one arm against its control: fresh, and the same executor."""
    problems = []
    age = _age_days(control, now)
    if age > max_age_days:
        problems.append(f"control run #{control['id']} is {age:.1f} days old (> {max_age_days:g}); "
                        "measure a fresh one: rerun the eval with the control arm in eval.arms")
    if control.get("executor_fingerprint") != arm.get("executor_fingerprint"):
        problems.append(f"control run #{control['id']} used executor "
                        f"{control.get('executor_fingerprint')!r}, run #{arm['id']} used "
                        f"{arm.get('executor_fingerprint')!r}")
    return problems


def family_experiments(ledger: Ledger, family: str) -> set[int]:
    """A family by name: every experiment recorded under that name, whatever its config."""
    found = {e["id"] for e in ledger.experiments() if e["name"] == family}
    if not found:
        raise LedgerError(f"no experiment named {family!r} in the ledger (the family)")
    return found


def run_env(run: dict) -> str | None:
    """The environment a run was measured on (its config snapshot's env.name)."""
    try:
        env = (json.loads(run.get("config_json") or "{}").get("env") or {}).get("name")
    except (ValueError, AttributeError):
        return None
    return env if isinstance(env, str) else None


def experiment_scope(ledger: Ledger, experiment) -> set[int]:
    """`--experiment`: an experiment id (#3 or 3), or a name (every experiment of that name)."""
    text = str(experiment).strip()
    if text.lstrip("#").isdigit():
        return {ledger.row("experiments", int(text.lstrip("#")))["id"]}
    return family_experiments(ledger, text)


def _describe(ledger: Ledger, exp_id) -> str:
    try:
        return f"#{exp_id} {ledger.row('experiments', exp_id)['name']}"
    except LedgerError:
        return f"#{exp_id}"


FAMILY_NOTE = ("Holm here corrects over this family's runs; a run's own report.json corrects over the "
               "comparisons of that run (its arms against its control), so the two adjusted p differ when the "
               "families do: the raw p is the same")


def resolve_run(ledger: Ledger, ref: str, experiments: set[int] | None = None, prefer: set[int] | None = None,
                chosen: bool = False) -> int:
    """A run id (an int, or written `#ID`), or an arm name: that arm's newest run with a valid
    eval (within `experiments`). A name is never read as an id: an imported arm named "3" is arm
    "3", not run #3 of another experiment.

    An arm name measured in more than one experiment is ambiguous: the newest run in `prefer`
    (the compared runs' experiments, for a control) is taken; otherwise the name is refused,
    naming the experiments and environments it was found in, unless the scope was chosen
    (`chosen`: --family or --experiment)."""
    if isinstance(ref, int) and not isinstance(ref, bool):
        return ref
    text = str(ref)
    if text.startswith("#") and text[1:].isdigit():
        return int(text[1:])
    found = []
    for row in reversed(ledger.rows("runs")):
        run = ledger.run(row["id"])
        if run["arm"] == ref and any(e["valid"] for e in run["evals"]) and \
                (experiments is None or run["experiment_id"] in experiments):
            found.append(run)
    if not found:
        scope = "" if experiments is None else " in the chosen experiments"
        hint = f" (a run id is written #{text})" if text.isdigit() else ""
        raise LedgerError(f"no measured run of arm {ref!r}{scope} in the ledger{hint}")
    if prefer:
        preferred = [r for r in found if r["experiment_id"] in prefer]
        if preferred:
            return preferred[0]["id"]
    where = list(dict.fromkeys(r["experiment_id"] for r in found))
    if len(where) > 1 and not chosen:
        places = "; ".join(f"{_describe(ledger, e)} ({', '.join(sorted({str(run_env(r)) for r in found if r['experiment_id'] == e}))}, "
                           f"newest run #{next(r['id'] for r in found if r['experiment_id'] == e)})" for e in where[:6])
        raise LedgerError(f"arm {ref!r} was measured in {len(where)} experiments: {places}; choose one with "
                          f"--experiment ID (or --family NAME), or pass a run id as #ID")
    return found[0]["id"]


def run_identity(run: dict) -> tuple | None:
    """What makes two ledger runs one measurement: the arm and the per-game file of its newest
    valid eval (its path; its content hash when it has no path). A run recorded twice (resumed,
    re-recorded) is one member of a family: its newest record stands for it."""
    import os

    evals = [e for e in run["evals"] if e["valid"]]
    if not evals:
        return None
    e = evals[-1]
    if e["jsonl_path"]:
        return (e["arm"] or run["arm"], os.path.realpath(e["jsonl_path"]))
    if e["jsonl_sha256"]:
        return (e["arm"] or run["arm"], e["jsonl_sha256"])
    return ("run", run["id"])


def family_runs(ledger: Ledger, run_ids: list[int], control_id: int,
                experiments: set[int] | None = None) -> list[int]:
    """Every measured run recorded under the compared runs' experiments (or the named family's),
    except the control's arm."""
    control_arm = ledger.run(control_id)["arm"]
    experiments = experiments or {ledger.run(r)["experiment_id"] for r in run_ids}
    family, seen = list(run_ids), {run_identity(ledger.run(r)) for r in run_ids} | {
        run_identity(ledger.run(control_id))}
    for row in reversed(ledger.rows("runs")):  # newest first: a measurement's newest record stands for it
        run = ledger.run(row["id"])
        if run["experiment_id"] in experiments and run["arm"] != control_arm and run["id"] != control_id \
                and any(e["valid"] for e in run["evals"]):
            identity = run_identity(run)
            if identity in seen:  # the same measurement recorded again: not a second member
                continue
            seen.add(identity)
            family.append(run["id"])
    return sorted(set(family))


def as_failures(outcome):
    """An outcome with every unmeasured trial read as a failure (0): the sensitivity reading of
    errored units, never the primary one."""
    return [0.0 if t is None else t for t in stats.trials_of(outcome)]


def over_budget(ledger: Ledger, run_id: int, control_id: int, rows: dict, control_rows: dict, common: set,
                comparison, max_error_rate: float | None, alpha: float) -> list[str]:
    """Why an imported comparison is not reportable under the error budget, as a skillos arm
    would have aborted (eval.max_error_rate over at least MIN_GAMES_FOR_ABORT common units); [] for
    runs skillos played itself (the runner applied the budget as they ran) and for a loss already
    called attrition (uneven between the arms: the more specific diagnosis)."""
    if max_error_rate is None or len(common) < MIN_GAMES_FOR_ABORT or (
            comparison.attrition_p is not None and comparison.attrition_p < alpha):
        return []
    found = []
    for who, rid, by_game in (("run #" + str(run_id), run_id, rows), (f"the control run #{control_id}", control_id,
                                                                       control_rows)):
        lost = sum(bool(by_game[g]["unmeasured"]) for g in common)
        if imported_as(ledger.run(rid)) and lost > max_error_rate * len(common):
            found.append(f"{who} (imported) left {lost} of {len(common)} common units unmeasured, above "
                         f"eval.max_error_rate {max_error_rate:g} (a skillos arm would have aborted)")
    return found


def compare_runs(ledger: Ledger, run_ids: list, control_id, *, alpha: float, power: float,
                 max_age_days: float, n_boot: int, family: str | None = None,
                 now: dt.datetime | None = None, experiment=None, worthwhile: float | None = None,
                 max_error_rate: float | None = None) -> dict:
    """Runs (ids, or arm names: the newest measured run of each) against a control; the
    settings are a config's (eval.alpha, eval.power, eval.control.max_age_days, eval.bootstrap,
    and experiment.expected_effect as `worthwhile`, which decides "can't tell yet";
    eval.max_error_rate as `max_error_rate`: an imported arm or control that left more of the
    common units unmeasured is not reportable, as a skillos run would have aborted).
    `experiment` (an id or a name) chooses where arm names are looked up; an arm name found in
    several experiments without it is refused. Every arm and the control name the experiment
    and environment they were taken from."""
    now = now or dt.datetime.now(dt.timezone.utc)
    experiments = family_experiments(ledger, family) if family else None
    if experiment is not None:
        chosen = experiment_scope(ledger, experiment)
        experiments = chosen if experiments is None else experiments & chosen
        if not experiments:
            raise LedgerError(f"--experiment {experiment!r} is not in the family {family!r}")
    run_ids = [resolve_run(ledger, r, experiments, chosen=experiments is not None) for r in run_ids]
    compared = {ledger.run(r)["experiment_id"] for r in run_ids}
    control_id = resolve_run(ledger, control_id, experiments, prefer=compared, chosen=experiments is not None)
    if control_id in run_ids:
        raise LedgerError(f"run #{control_id} is the control; compare other runs against it")
    control = ledger.run(control_id)
    control_rows = run_rows(ledger, control_id)
    family_ids = family_runs(ledger, run_ids, control_id, experiments)
    rows = {r: run_rows(ledger, r) for r in family_ids}
    common = set(control_rows).intersection(*(set(rows[r]) for r in run_ids))
    # the family's comparisons, each on the games it shares with the control
    shared = {r: sorted(set(rows[r]) & set(control_rows) & (common if r in run_ids else set(rows[r])))
              for r in family_ids}

    def member(r: int, read) -> stats.Comparison:
        """Run r against the control on the games it shares with it, each row read by `read`."""
        return stats.compare_units({g: read(control_rows[g]) for g in shared[r]},
                                   {g: read(rows[r][g]) for g in shared[r]},
                                   names=(f"run#{r}", f"run#{control_id}"), alpha=alpha, power=power, n_boot=n_boot)

    comparisons = {r: member(r, row_outcome) for r in family_ids}
    bh = dict(zip(family_ids, stats.adjust([comparisons[r].p_value if comparisons[r].p_value is not None
                                            else 1.0 for r in family_ids], "fdr_bh")))
    problems = {}
    for r in run_ids:
        problems[r] = control_problems(control, ledger.run(r), max_age_days, now)
        if set(rows[r]) != set(control_rows):
            problems[r].append(f"denominators differ: run #{r} recorded {len(rows[r])} games, the "
                               f"control {len(control_rows)}; compared on the {len(common)} in common")
        problems[r] += over_budget(ledger, r, control_id, rows[r], control_rows, common, comparisons[r],
                                   max_error_rate, alpha)
    name = family or "the compared runs' experiments"
    decided = stats.verdicts(comparisons, alpha=alpha, family=name, correction="holm", problems=problems,
                             worthwhile=worthwhile)
    # The same family, every member with both arms' unmeasured units and trials read as failures
    # (the problems as they are): said beside a verdict it changes
    failing = {r: member(r, lambda row: as_failures(row_outcome(row))) for r in family_ids}
    failing_decided = stats.verdicts(failing, alpha=alpha, family=name, correction="holm", problems=problems,
                                     worthwhile=worthwhile)

    def denominators(by_game: dict) -> dict:
        on_common = [by_game[g] for g in sorted(common)]
        scored = any(r.get("trials") is not None for r in on_common)
        out = {"games_recorded": len(by_game), "attempted": len(on_common),
               "measured": sum(not r["unmeasured"] for r in on_common),
               "unmeasured": sum(bool(r["unmeasured"]) for r in on_common),
               "successes": None if scored else sum(bool(r["success"]) for r in on_common),
               "coerced_actions": sum(r.get("coerced_actions", 0) for r in on_common)}
        if scored:  # units with trials or scores: the mean score over measured units, and the trials
            out.update(stats.score_summary([row_outcome(r) for r in on_common]))
        return out

    def origin(run: dict) -> dict:
        exp = run["experiment_id"]
        name = ledger.row("experiments", exp)["name"] if exp is not None else None
        return {"experiment_id": exp, "experiment": name, "env": run_env(run)}

    arms = []
    for r in run_ids:
        run, verdict = ledger.run(r), decided[r]
        comp = comparisons[r].to_dict()
        comp.update(p_adjusted=verdict.p_adjusted, p_holm=verdict.p_adjusted,
                    p_bh=bh[r] if comp["p_value"] is not None else None)
        errored = failing_decided[r]
        # an unmeasured unit is one whose every trial is None: the trials say both
        unmeasured = any(t is None for g in common for by_game in (rows[r], control_rows)
                         for t in stats.trials_of(row_outcome(by_game[g])))
        arms.append({"run_id": r, "arm": run["arm"], **origin(run), "p_adjusted": verdict.p_adjusted,
                     "denominators": denominators(rows[r]), "comparison": comp,
                     "verdict": verdict.to_dict(), "improvement": verdict.word == "improvement",
                     "why_not": [] if verdict.word == "improvement" else verdict.reasons,
                     # None: nothing was unmeasured, so reading it as failures changes nothing
                     "unmeasured_as_failures": None if not unmeasured else {
                         "verdict": errored.to_dict(), "changes_the_verdict": errored.word != verdict.word}})
    return {"control": {"run_id": control_id, "arm": control["arm"], **origin(control),
                        "age_days": round(_age_days(control, now), 2),
                        "executor_fingerprint": control.get("executor_fingerprint"),
                        "denominators": denominators(control_rows)},
            "family": {"name": family, "runs": family_ids, "size": len(family_ids),
                       "correction": "holm (and fdr_bh)",
                       # why a run's own report.json can show another Holm p for the same pair
                       "note": FAMILY_NOTE},
            "common_games": len(common), "alpha": alpha, "power": power,
            "max_age_days": max_age_days, "arms": arms}


def imported_as(run: dict) -> dict:
    """What an import recorded of a run's arm beyond its name: {configuration, condition, ...}."""
    try:
        imported = json.loads(run.get("config_json") or "{}").get("imported") or {}
    except (ValueError, AttributeError):
        return {}
    return imported if isinstance(imported, dict) else {}


SCORE_ROUNDING = 0.0005  # a registry's score, given to one decimal of 100: closer tasks are ties


def compare_configurations(ledger: Ledger, family: str, control_condition: str, *, alpha: float, power: float,
                           n_boot: int) -> dict:
    """An imported registry re-tested as its authors scored it (evals/skillsbench.py): per
    configuration, each other condition against `control_condition` paired over tasks
    (stats.compare_units), each condition's mean score on the source's scale (mean reward x 100
    over measured tasks) and the lift, every comparison one member of a Holm family over the
    configurations. Runs recorded twice count once (their newest record)."""
    newest, experiments = {}, family_experiments(ledger, family)
    for row in reversed(ledger.rows("runs")):  # newest first: a measurement's newest record stands for it
        run = ledger.run(row["id"])
        meta = imported_as(run)
        if run["experiment_id"] not in experiments or not meta.get("configuration") \
                or not any(e["valid"] for e in run["evals"]):
            continue
        newest.setdefault((meta["configuration"], meta.get("condition")), run["id"])
    if not newest:
        raise LedgerError(f"no imported run of family {family!r} names its configuration and condition "
                          "(import a results registry; a per-game file names arms only)")
    configurations = sorted({c for c, _ in newest})
    conditions = sorted({k for _, k in newest})
    if control_condition not in conditions:
        raise LedgerError(f"--control {control_condition!r}: no such condition in family {family!r}; "
                          f"its conditions: {', '.join(map(str, conditions))}")
    comparisons, rows, scale = {}, {}, lambda m: None if m is None else 100 * m  # noqa: E731
    for configuration in configurations:
        control_id = newest.get((configuration, control_condition))
        for condition in conditions:
            treated_id = newest.get((configuration, condition))
            if condition == control_condition or treated_id is None:
                continue
            key = (configuration, condition)
            treated = run_rows(ledger, treated_id)
            control = run_rows(ledger, control_id) if control_id is not None else {}
            shared = sorted(set(treated) & set(control))
            comparisons[key] = stats.compare_units({t: row_outcome(control[t]) for t in shared},
                                                   {t: row_outcome(treated[t]) for t in shared},
                                                   names=(condition, control_condition), alpha=alpha, power=power,
                                                   n_boot=n_boot, tie_within=SCORE_ROUNDING)
            rows[key] = {"configuration": configuration, "condition": condition, "run_id": treated_id,
                         "control_condition": control_condition, "control_run_id": control_id,
                         "tasks": {"treated": len(treated), "control": len(control), "paired": len(shared)},
                         "mean_score": scale(stats.mean_score([row_outcome(r) for r in treated.values()])),
                         "control_mean_score": scale(stats.mean_score([row_outcome(r) for r in control.values()]))}
    problems = {k: ([] if rows[k]["control_run_id"] is not None else
                    [f"{k[0]} has no {control_condition!r} run to compare with"]) for k in rows}
    for k, r in rows.items():
        if r["control_run_id"] is not None and r["tasks"]["treated"] != r["tasks"]["control"]:
            problems[k].append(f"denominators differ: {r['tasks']['treated']} tasks against {r['tasks']['control']}; "
                               f"compared on the {r['tasks']['paired']} in common")
    decided = stats.verdicts(comparisons, alpha=alpha, family=f"{family}, per configuration", correction="holm",
                             problems=problems)
    out = []
    for key, row in rows.items():
        lift = (None if row["mean_score"] is None or row["control_mean_score"] is None
                else row["mean_score"] - row["control_mean_score"])
        out.append({**row, "lift": lift, "comparison": comparisons[key].to_dict(),
                    "verdict": decided[key].to_dict(), "p_holm": decided[key].p_adjusted})
    lifts = [r["lift"] for r in out if r["lift"] is not None]
    return {"family": {"name": family, "size": len(out), "correction": "holm", "member": "a configuration's "
                       "condition against its own control condition"},
            "control_condition": control_condition, "configurations": out,
            "mean_lift": sum(lifts) / len(lifts) if lifts else None, "lifts_measured": len(lifts),
            "alpha": alpha, "power": power}
