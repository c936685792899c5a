"""A postmortem generated from the ledger's records, not written from memory: timeline,
failures by category and mode, cost, what each gate did, overrides and their reasons, a
person's steps and where they ran, open items.

Scope: one experiment (its runs and the failures linked to either), one run, or everything
since a date.
"""

from __future__ import annotations

import json
from collections import Counter

from skillos.ledger.stats import failure_counts
from skillos.ledger.store import CURRENT_FAILURES, Ledger, LedgerError
from skillos.person import forged

# what the postmortem prints of a failure; the counts come from failure_counts
FAILURE_COLUMNS = ("id", "what", "category", "detected_by", "gate", "status", "valid", "created_at")


def _scope(ledger: Ledger, experiment_id=None, run_id=None, since=None):
    """The scope's records, and its failures as a condition on CURRENT_FAILURES (they are
    counted and listed in SQL: a ledger of 100,000 failures is read in well under a second)."""
    runs = ledger.rows("runs")
    gates, overrides = ledger.rows("gate_results"), ledger.rows("overrides")
    experiments = ledger.experiments()
    condition, args = "1", []
    if experiment_id is not None:
        ledger.experiment(experiment_id)  # raises on an unknown id
        runs = [r for r in runs if r["experiment_id"] == experiment_id]
        run_ids = {r["id"] for r in runs}
        condition = "(experiment_id = ? OR run_id IN (SELECT id FROM runs WHERE experiment_id = ?))"
        args = [experiment_id, experiment_id]
        gates = [g for g in gates if g["experiment_id"] == experiment_id or g["run_id"] in run_ids]
        overrides = [o for o in overrides if o["experiment_id"] == experiment_id]
        experiments = [e for e in experiments if e["id"] == experiment_id]
        title = f"experiment #{experiment_id} {experiments[0]['name']}"
    elif run_id is not None:
        run = ledger.run(run_id)
        runs = [r for r in runs if r["id"] == run_id]
        condition, args = "run_id = ?", [run_id]
        gates = [g for g in gates if g["run_id"] == run_id]
        overrides = []
        experiments = [e for e in experiments if e["id"] == run["experiment_id"]]
        title = f"run #{run_id}"
    else:
        title = f"everything since {since}" if since else "the whole ledger"
    if since:
        def keep(rows, key="created_at"):
            return [r for r in rows if (r.get(key) or "") >= since]

        runs, gates = keep(runs, "started_at"), keep(gates)
        overrides, experiments = keep(overrides), keep(experiments)
        condition, args = condition + " AND created_at >= ?", args + [since]
    return title, experiments, runs, (condition, args), gates, overrides


def _failures(ledger: Ledger, condition: str, args: list) -> list[dict]:
    cursor = ledger.db.cursor()
    cursor.row_factory = None  # plain tuples into small dicts: no Row object per failure
    cursor.execute(f"{CURRENT_FAILURES} SELECT {', '.join(FAILURE_COLUMNS)} FROM current_failures "
                   f"WHERE {condition} ORDER BY id", args)
    return [dict(zip(FAILURE_COLUMNS, values)) for values in cursor]


def postmortem(ledger: Ledger, experiment_id: int | None = None, run_id: int | None = None,
               since: str | None = None) -> str:
    if sum(x is not None for x in (experiment_id, run_id)) > 1:
        raise LedgerError("give an experiment or a run, not both")
    with ledger.snapshot():  # the records, the failures and their counts: one state of the file
        title, experiments, runs, (condition, args), gates, overrides = _scope(ledger, experiment_id, run_id, since)
        failures = _failures(ledger, condition, args)
        stats = failure_counts(ledger, condition, args)
        goal = ledger.goal()
        ids = {f["id"] for f in failures}
        fixes = [ledger.fix(row["id"]) for row in ledger.rows("fixes") if row["failure_id"] in ids]
        steps = _person_steps(ledger, experiments if experiment_id is not None or run_id is not None else None, since)
    return render(ledger.path, title, goal, experiments, runs, failures, stats, gates, overrides, fixes, steps)


def _person_steps(ledger: Ledger, experiments: list | None, since: str | None) -> list[dict]:
    """The approvals in scope (of the scope's experiments by name; all of them for the whole
    ledger) and, for the whole ledger, the goals: each a person's step with its witness."""
    names = None if experiments is None else {e["name"] for e in experiments}
    steps = []
    for row in ledger.approvals():
        plan = json.loads(row["plan_json"] or "{}")
        if names is None or plan.get("experiment") in names:
            steps.append({"what": f"approval #{row['id']} of plan hash {row['config_hash']} ({plan.get('experiment')})",
                          "actor": row["actor"], "created_at": row["created_at"], "witness": row["witness"]})
    if names is None:
        for row in ledger.goals():
            steps.append({"what": f"goal #{row['id']} set", "actor": row["set_by"], "created_at": row["created_at"],
                          "witness": json.loads(row.get("witness_json") or "null")})
    return sorted((s for s in steps if not since or s["created_at"] >= since), key=lambda s: s["created_at"])


def person_step_line(step: dict) -> str:
    """One person's step as the ledger and the postmortem show it: who, where, and what in its
    witness suggests it was not a person at their terminal (toolkit/person.py)."""
    seen = step["witness"] or {}
    term = (seen.get("terminal") or {}).get("stdin") or "no terminal"
    chain = " <- ".join(p["name"] for p in (seen.get("ancestry") or [])[:8]) or "not recorded"
    flags = forged(step["witness"])
    return (f"{step['created_at']} {step['what']} by {step['actor']} at {term}, under {chain}: "
            + ("SUSPECT: " + "; ".join(flags) if flags else "a terminal, no agent found"))


def render(path, title: str, goal: dict | None, experiments: list, runs: list, failures: list,
           stats: dict, gates: list, overrides: list, fixes: list = (), steps: list = ()) -> str:
    """The markdown; `failures` need FAILURE_COLUMNS, `stats` is failure_stats' dict."""
    out = [f"# Postmortem: {title}", "",
           f"Generated from the ledger at `{path}`: every line below is a record, not a recollection.",
           "", f"Project goal: {goal['text'] if goal else '(none set)'}", ""]

    out += ["## Experiments", ""]
    for e in experiments:
        valid = "valid" if e["valid"] else f"INVALID ({e['invalid_reason']})"
        out.append(f"- #{e['id']} **{e['name']}** [{e['status']}, {valid}]: {e['hypothesis'] or '(no hypothesis)'}")
        if e["conclusion"]:
            out.append(f"  - conclusion: {e['conclusion']}")
    out += ["(none)"] if not experiments else []

    out += ["", "## Timeline", ""]
    events = []
    for e in experiments:
        events.append((e["created_at"], f"experiment #{e['id']} {e['name']} registered"))
        events += [(c["created_at"], f"experiment #{e['id']} {c['kind']}: {c['value'] or ''} "
                    f"{('(' + c['reason'] + ')') if c['reason'] else ''}".rstrip())
                   for c in e["corrections"]]
    for r in runs:
        events.append((r["started_at"], f"run #{r['id']} started (seed {r['seed']}, commit "
                       f"{(r['git_commit'] or 'n/a')[:10]}{', dirty' if r['git_dirty'] else ''})"))
        if r["ended_at"]:
            events.append((r["ended_at"], f"run #{r['id']} {r['status']}"
                           + (f": {r['detail']}" if r["detail"] else "")))
    events += [(f["created_at"], f"failure #{f['id']} ({f['category']}, by {f['detected_by']}): {f['what']}")
               for f in failures]
    events += [(o["created_at"], f"override of gate {o['gate']} {o['check_name']} by {o['actor']}: {o['reason']}")
               for o in overrides]
    out += [f"- {t} {text}" for t, text in sorted(events)] or ["(no events)"]

    out += ["", "## Failures", "",
            f"{stats['failures']} failures ({stats['retracted_or_invalid']} retracted or invalid, not counted).", ""]
    if stats["failures"]:
        out += ["| category | n |", "|---|---|"] + [f"| {c} | {n} |" for c, n in stats["by_category"].items()]
        out += ["", "| mode | n |", "|---|---|"] + ([f"| {m} | {n} |" for m, n in stats["by_mode"].items()]
                                                   or ["| (none tagged) | 0 |"])
        cost = stats["cost"]
        out += ["", f"Cost: {cost['gpu_hours']:.1f} GPU-hours (known for {cost['gpu_hours_measured_on']} of "
                f"{cost['of']} failures), {cost['wall_hours']:.1f} wall-hours (known for "
                f"{cost['wall_hours_measured_on']} of {cost['of']})."]
        doc = stats["documented"]
        out += [f"Documented: {doc['n']} of {doc['of']} ({doc['definition']})."]

    out += ["", "## What each gate did", ""]
    if gates:
        by_gate = Counter((g["gate"], g["status"]) for g in gates)
        for gate in sorted({g["gate"] for g in gates}):
            counts = ", ".join(f"{by_gate[(gate, s)]} {s}" for s in ("PASS", "WARN", "FAIL", "SKIP")
                               if by_gate[(gate, s)])
            out.append(f"- gate {gate}: {counts}")
    else:
        out.append("No gate results were recorded for this scope.")
    caught = Counter(f["gate"] for f in failures if f["gate"])
    if caught:
        out += ["", "Failures by the gate that would have caught them: "
                + ", ".join(f"gate {g}: {n}" for g, n in sorted(caught.items()))]

    out += ["", "## Fixes and their verification", ""]
    for x in fixes:
        expected = "" if x.get("expected_size") is None else f" by {x['expected_size']:g}"
        verdict = x.get("verdict") or "not verified yet"
        after = f", after run #{x['after_run_id']}" if x.get("after_run_id") else ""
        out.append(f"- fix #{x['id']} for failure #{x['failure_id']}: {x['description']} ({x['metric']} should go "
                   f"{x['direction']}{expected}; before run #{x['before_run_id']}{after}): **{verdict}**"
                   + (f": {x['detail']}" if x.get("detail") else "")
                   + ("" if x.get("valid", True) else f" [INVALID: {x.get('invalid_reason')}]"))
    if not fixes:
        out.append("None recorded." if not failures else
                   "None recorded: no failure in this scope has a fix (skillos ledger fixes add, then verify-fix).")

    out += ["", "## Overrides", ""]
    out += [f"- gate {o['gate']} {o['check_name']}, by {o['actor']}: {o['reason']}" for o in overrides] \
        or ["None."]

    out += ["", "## A person's steps (approvals, goals) and where they ran", ""]
    out += [f"- {person_step_line(step)}" for step in steps] or ["None."]

    out += ["", "## Open items", ""]
    open_items = [f"- failure #{f['id']} is {f['status']}: {f['what']}" for f in failures
                  if f["valid"] and f["status"] != "verified"]
    open_items += [f"- fix #{x['id']} has not been verified (skillos ledger verify-fix {x['id']} --after RUN)"
                   for x in fixes if not x.get("verdict") and x.get("valid", True)]
    open_items += [f"- run #{r['id']} has no end recorded (still running, or lost)" for r in runs
                   if not r["ended_at"]]
    out += open_items or ["None."]
    return "\n".join(out) + "\n"
