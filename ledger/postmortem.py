"""A postmortem generated from the ledger's records, not written from memory: timeline,
failures by category and mode, cost, what each gate did, overrides and their reasons, open items.

Scope: one experiment (its runs and the failures linked to either), one run, or everything
since a date.
"""

from __future__ import annotations

from collections import Counter

from skillos.ledger.stats import failure_stats
from skillos.ledger.store import Ledger, LedgerError


def _scope(ledger: Ledger, experiment_id=None, run_id=None, since=None):
    runs = ledger.rows("runs")
    failures = ledger.failures()
    gates, overrides = ledger.rows("gate_results"), ledger.rows("overrides")
    experiments = ledger.experiments()
    if experiment_id is not None:
        ledger.experiment(experiment_id)  # raises on an unknown id
        runs = [r for r in runs if r["experiment_id"] == experiment_id]
        run_ids = {r["id"] for r in runs}
        failures = [f for f in failures if f["experiment_id"] == experiment_id or f["run_id"] in run_ids]
        gates = [g for g in gates if g["experiment_id"] == experiment_id or g["run_id"] in run_ids]
        overrides = [o for o in overrides if o["experiment_id"] == experiment_id]
        experiments = [e for e in experiments if e["id"] == experiment_id]
        title = f"experiment #{experiment_id} {experiments[0]['name']}"
    elif run_id is not None:
        run = ledger.run(run_id)
        runs = [r for r in runs if r["id"] == run_id]
        failures = [f for f in failures if f["run_id"] == run_id]
        gates = [g for g in gates if g["run_id"] == run_id]
        overrides = []
        experiments = [e for e in experiments if e["id"] == run["experiment_id"]]
        title = f"run #{run_id}"
    else:
        title = f"everything since {since}" if since else "the whole ledger"
    if since:
        def keep(rows, key="created_at"):
            return [r for r in rows if (r.get(key) or "") >= since]

        runs, failures, gates = keep(runs, "started_at"), keep(failures), keep(gates)
        overrides, experiments = keep(overrides), keep(experiments)
    return title, experiments, runs, failures, gates, overrides


def postmortem(ledger: Ledger, experiment_id: int | None = None, run_id: int | None = None,
               since: str | None = None) -> str:
    if sum(x is not None for x in (experiment_id, run_id)) > 1:
        raise LedgerError("give an experiment or a run, not both")
    title, experiments, runs, failures, gates, overrides = _scope(ledger, experiment_id, run_id, since)
    stats = failure_stats(failures)
    goal = ledger.goal()
    out = [f"# Postmortem: {title}", "",
           f"Generated from the ledger at `{ledger.path}`: every line below is a record, not a recollection.",
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

    out += ["", "## Overrides", ""]
    out += [f"- gate {o['gate']} {o['check_name']}, by {o['actor']}: {o['reason']}" for o in overrides] \
        or ["None."]

    out += ["", "## Open items", ""]
    open_items = [f"- failure #{f['id']} is {f['status']}: {f['what']}" for f in failures
                  if f["valid"] and f["status"] != "verified"]
    open_items += [f"- run #{r['id']} has no end recorded (still running, or lost)" for r in runs
                   if not r["ended_at"]]
    out += open_items or ["None."]
    return "\n".join(out) + "\n"
