"""`skillos ledger ...`: the failure ledger and the experiment registry from the shell.
Every command honours SKILLOS_HOME; every list/show has --json."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

from skillos.errors import SkillosError

app = typer.Typer(help="The ledger: experiments, runs, evals, failures, overrides "
                  "($SKILLOS_HOME/ledger.db).", no_args_is_help=True)
failures_app = typer.Typer(help="Record and read failures.", no_args_is_help=True)
experiments_app = typer.Typer(help="The experiment registry.", no_args_is_help=True)
app.add_typer(failures_app, name="failures")
app.add_typer(experiments_app, name="experiments")
fixes_app = typer.Typer(help="Fixes and their verification (gate 6).", no_args_is_help=True)
app.add_typer(fixes_app, name="fixes")

JSON = typer.Option(False, "--json", help="Machine-readable output.")


def _ledger():
    from skillos.ledger import Ledger

    return Ledger()


def _emit(data, as_json: bool, lines) -> None:
    from skillos.secrets import redact_text

    if as_json:
        from skillos.cli_common import print_json

        print_json(data)  # the one redacting printer: no Infinity/NaN tokens, no secrets
    else:
        for line in lines(data):
            typer.echo(redact_text(line))


def _failure_line(f: dict) -> str:
    flag = "" if f["valid"] else f"  [{f['invalid_reason']}]"
    modes = f" ({', '.join(f['modes'])})" if f["modes"] else ""
    return f"#{f['id']} [{f['status']}] {f['category']}/{f['kind']}{modes}: {f['what']}{flag}"


@failures_app.command("add")
def failures_add(
    what: str = typer.Option(..., "--what", help="What went wrong, in one sentence."),
    category: str = typer.Option(..., "--category", help="harness-bug, wrong-claim, wasted-compute, "
                                 "bad-reasoning, process, statistical, near-miss"),
    mode: List[str] = typer.Option([], "--mode", help="A failure mode (repeatable); see `ledger modes`."),
    kind: str = typer.Option("scientific", help="scientific or operational"),
    cost_gpu_hours: Optional[float] = typer.Option(None, help="GPU-hours lost."),
    cost_wall_hours: Optional[float] = typer.Option(None, help="Wall-clock hours lost."),
    detected_by: str = typer.Option("agent", help="gate, watchdog, person, agent or toolkit"),
    gate: Optional[str] = typer.Option(None, help="The gate (1-7) that would have caught it."),
    experiment: Optional[int] = typer.Option(None, help="Linked experiment id."),
    run: Optional[int] = typer.Option(None, help="Linked run id."),
    as_json: bool = JSON,
):
    """Record a failure; prints its id."""
    with _ledger() as ledger:
        fid = ledger.add_failure(what, category, mode, kind, cost_gpu_hours, cost_wall_hours,
                                 detected_by, gate, experiment, run)
        _emit(ledger.failure(fid), as_json, lambda f: [_failure_line(f)])


@failures_app.command("list")
def failures_list(category: Optional[str] = None, status: Optional[str] = None,
                  limit: int = typer.Option(100, help="Show the newest N (0: all); the total is always printed."),
                  as_json: bool = JSON):
    """The newest failures, and how many there are (invalidated ones are marked).

    --json: {"shown": n, "of": total, "limit": N, "failures": [...]}.
    """
    with _ledger() as ledger:
        page = ledger.failures_page(limit or None, category=category, status=status)

    def lines(p):
        if not p["of"]:
            return ["no failures recorded" if not (category or status) else "no failure matches"]
        cut = f" (the newest; --limit 0 shows all)" if p["shown"] < p["of"] else ""
        return [_failure_line(f) for f in p["failures"]] + [f"{p['shown']} of {p['of']} failures shown{cut}"]

    _emit(page, as_json, lines)


@failures_app.command("show")
def failures_show(failure_id: int, as_json: bool = JSON):
    """One failure with its modes, fixes and corrections."""
    with _ledger() as ledger:
        _emit(ledger.failure(failure_id), as_json,
              lambda f: [_failure_line(f)] + [f"  {k}: {v}" for k, v in f.items()
                                              if k not in ("what", "corrections", "token")])


@failures_app.command("search")
def failures_search(text: str, as_json: bool = JSON):
    """Failures whose description contains TEXT."""
    with _ledger() as ledger:
        _emit(ledger.failures(text=text), as_json,
              lambda rows: [_failure_line(f) for f in rows] or ["no match"])


@failures_app.command("set-status")
def failures_set_status(failure_id: int, status: str,
                        reason: str = typer.Option(..., help="Why the status changes.")):
    """Mark a failure open, fixed or verified (a correction row; history is kept)."""
    with _ledger() as ledger:
        ledger.set_failure_status(failure_id, status, reason)
        typer.echo(_failure_line(ledger.failure(failure_id)))


def _experiment_line(e: dict) -> str:
    flag = "" if e["valid"] else f"  [INVALID: {e['invalid_reason']}]"
    return f"#{e['id']} {e['name']} [{e['status']}] config {e['config_hash']}{flag}"


@experiments_app.command("list")
def experiments_list(as_json: bool = JSON,
                     evidence: bool = typer.Option(False, help="Only valid experiments (evidence).")):
    """Experiments, with their valid flag."""
    with _ledger() as ledger:
        rows = ledger.evidence() if evidence else ledger.experiments()
        _emit(rows, as_json, lambda rs: [_experiment_line(e) for e in rs] or ["no experiments"])


@experiments_app.command("show")
def experiments_show(experiment: str = typer.Argument(..., help="Experiment id or name."), as_json: bool = JSON):
    """One experiment with its runs and their evals."""
    with _ledger() as ledger:
        experiment_id = ledger.resolve_experiment(experiment)
        def lines(e):
            out = [_experiment_line(e), f"  hypothesis: {e['hypothesis']}"]
            for r in e["runs"]:
                out.append(f"  run #{r['id']} arm {r['arm']} [{r['status']}] seed {r['seed']} "
                           f"commit {(r['git_commit'] or 'n/a')[:10]}{' dirty' if r['git_dirty'] else ''}")
                for ev in r["evals"]:
                    out.append(f"    eval #{ev['id']}: {ev['successes']}/{ev['n_measured']} measured "
                               f"of {ev['n_attempted']} attempted, {ev['n_unmeasured']} unmeasured")
            return out

        _emit(ledger.experiment(experiment_id), as_json, lines)


@experiments_app.command("conclude")
def experiments_conclude(experiment_id: int, text: str = typer.Option(..., "--text",
                         help="The conclusion, with the numbers it rests on.")):
    """Record an experiment's conclusion (a correction row: earlier conclusions stay in history)."""
    with _ledger() as ledger:
        ledger.correct("experiments", experiment_id, "conclusion", "concluded", value=text)
        ledger.correct("experiments", experiment_id, "status", "concluded", value="concluded")
        typer.echo(_experiment_line(ledger.experiment(experiment_id)))


@experiments_app.command("add")
def experiments_add(name: str = typer.Option(...), hypothesis: str = typer.Option(""),
                    success_metric: str = typer.Option(""), as_json: bool = JSON):
    """Register an experiment before running it."""
    with _ledger() as ledger:
        eid = ledger.add_experiment(name, hypothesis, success_metric)
        _emit(ledger.experiment(eid), as_json, lambda e: [_experiment_line(e)])


@fixes_app.command("add")
def fixes_add(
    failure: int = typer.Option(..., help="The failure this fixes."),
    description: str = typer.Option(..., help="What the fix changes."),
    metric: str = typer.Option("success_rate", help="The number the fix should move: a measured metric "
                               "(success_rate)."),
    direction: str = typer.Option("up", help="up or down"),
    expected: Optional[float] = typer.Option(None, help="Expected size of the move (0.1 = 10 pts)."),
    before: int = typer.Option(..., help="The run before the fix."),
    as_json: bool = JSON,
):
    """Record a fix and what it should move; verify it later with `ledger verify-fix`."""
    with _ledger() as ledger:
        fid = ledger.add_fix(failure, description, metric, direction, expected, before)
        _emit(ledger.fix(fid), as_json, lambda f: [f"fix #{f['id']} for failure #{f['failure_id']}: "
                                                   f"{f['metric']} should go {f['direction']}"])


@app.command("verify-fix")
def verify_fix(fix_id: int, after: int = typer.Option(..., help="The run after the fix."),
               as_json: bool = JSON):
    """Gate 6: a fix is verified only if the number moved (paired before/after).

    Otherwise the failure is reopened with the numbers, and the exit code is 1.
    """
    from skillos.config import Config
    from skillos.evals.verify import verify_fix as verify

    settings = Config().eval  # the schema's statistics settings
    with _ledger() as ledger:
        result = verify(ledger, fix_id, after, alpha=settings.alpha, power=settings.power,
                        n_boot=settings.bootstrap)
    _emit(result, as_json, lambda r: [r["detail"]])
    if not result["verified"]:
        raise typer.Exit(1)


@app.command("invalidate")
def invalidate(table: str = typer.Argument(..., help="experiments, runs, evals, failures or fixes"),
               row_id: int = typer.Argument(...),
               reason: str = typer.Option(..., help="Why it is no longer evidence.")):
    """Mark a record invalid (a correction row): gates and reports stop treating it as evidence."""
    with _ledger() as ledger:
        ledger.correct(table, row_id, "invalidate", reason)
        typer.echo(f"{table} #{row_id} invalidated: {reason}")


@app.command("export")
def export(table: str, fmt: str = typer.Option("jsonl", "--format", help="jsonl or csv"),
           out: Optional[Path] = typer.Option(None, help="File to write (default: stdout).")):
    """Every row of a table, as JSONL or CSV."""
    if fmt not in ("jsonl", "csv"):
        raise SkillosError(f"--format {fmt!r}: choose jsonl or csv")
    with _ledger() as ledger:
        rows = ledger.rows(table)
    buffer = io.StringIO()
    if fmt == "jsonl":
        buffer.writelines(json.dumps(r, default=str) + "\n" for r in rows)
    elif rows:
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    from skillos.secrets import redact_text

    if out:
        from skillos.files import write_atomic

        write_atomic(out, buffer.getvalue())  # redacts
    else:
        sys.stdout.write(redact_text(buffer.getvalue()))


@app.command("stats")
def stats(as_json: bool = JSON):
    """Failures by category and mode, cost, and the share documented."""
    from skillos.ledger.stats import failure_counts

    with _ledger() as ledger:
        data = failure_counts(ledger)

    def lines(d):
        out = [f"failures: {d['failures']} (retracted or invalid, not counted: {d['retracted_or_invalid']})"]
        out += [f"  {c}: {n}" for c, n in d["by_category"].items()]
        out.append("by mode:")
        out += [f"  {m}: {n}" for m, n in d["by_mode"].items()] or ["  (none tagged)"]
        c = d["cost"]
        out.append(f"cost: {c['gpu_hours']:.1f} GPU-h (on {c['gpu_hours_measured_on']} of {c['of']}), "
                   f"{c['wall_hours']:.1f} wall-h (on {c['wall_hours_measured_on']} of {c['of']})")
        doc = d["documented"]
        share = "n/a" if doc["share"] is None else f"{doc['share']:.0%}"
        out.append(f"documented: {doc['n']}/{doc['of']} ({share}): {doc['definition']}")
        return out

    _emit(data, as_json, lines)


@app.command("modes")
def modes(as_json: bool = JSON):
    """The failure categories and cross-cutting modes, with a line each."""
    from skillos.ledger import taxonomy

    data = {"categories": taxonomy.CATEGORIES, "modes": taxonomy.MODES}
    _emit(data, as_json, lambda d: ["categories:"] + [f"  {k}: {v}" for k, v in d["categories"].items()]
          + ["modes:"] + [f"  {k}: {v}" for k, v in d["modes"].items()])


@app.command("goal")
def goal(text: Optional[str] = typer.Argument(None, help="New goal (a person sets it)."),
         person: bool = typer.Option(False, "--person", help="I am a person, not an agent."),
         as_json: bool = JSON):
    """Show the project goal, or set it (people only)."""
    with _ledger() as ledger:
        if text is not None:
            ledger.set_goal(text, "person" if person else "agent")
        _emit(ledger.goal(), as_json, lambda g: [g["text"] if g else "no goal set"])
