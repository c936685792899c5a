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

from skillos.cli_common import JSON, emit
from skillos.cli_render import (experiment_detail_lines, experiment_line, failure_detail_lines, failure_line,
                                failure_stats_lines, failures_page_lines, taxonomy_lines, watch_lines)
from skillos.errors import SkillosError

app = typer.Typer(help="The ledger: experiments, runs, evals, failures, overrides "
                  "($SKILLOS_HOME/ledger.db).", no_args_is_help=True)
failures_app = typer.Typer(help="Record and read failures.", no_args_is_help=True)
experiments_app = typer.Typer(help="The experiment registry.", no_args_is_help=True)
app.add_typer(failures_app, name="failures")
app.add_typer(experiments_app, name="experiments")
fixes_app = typer.Typer(help="Fixes and their verification (gate 6).", no_args_is_help=True)
app.add_typer(fixes_app, name="fixes")

def _ledger():
    from skillos.ledger import Ledger

    return Ledger()


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
        emit(ledger.failure(fid), as_json, lambda f: [failure_line(f)])


@failures_app.command("list")
def failures_list(category: Optional[str] = None, status: Optional[str] = None,
                  limit: int = typer.Option(100, help="Show the newest N (0: all); the total is always printed."),
                  as_json: bool = JSON):
    """The newest failures, and how many there are (invalidated ones are marked).

    --json: {"shown": n, "of": total, "limit": N, "failures": [...]}.
    """
    with _ledger() as ledger:
        page = ledger.failures_page(limit or None, category=category, status=status)
    emit(page, as_json, lambda p: failures_page_lines(p, filtered=bool(category or status)))


@failures_app.command("show")
def failures_show(failure_id: int, as_json: bool = JSON):
    """One failure with its modes, fixes and corrections."""
    with _ledger() as ledger:
        emit(ledger.failure(failure_id), as_json, failure_detail_lines)


@failures_app.command("search")
def failures_search(text: str, as_json: bool = JSON):
    """Failures whose description contains TEXT."""
    with _ledger() as ledger:
        emit(ledger.failures(text=text), as_json, lambda rows: [failure_line(f) for f in rows] or ["no match"])


@failures_app.command("set-status")
def failures_set_status(failure_id: int, status: str,
                        reason: str = typer.Option(..., help="Why the status changes.")):
    """Mark a failure open, fixed or verified (a correction row; history is kept)."""
    with _ledger() as ledger:
        ledger.set_failure_status(failure_id, status, reason)
        emit(ledger.failure(failure_id), False, lambda f: [failure_line(f)])


@experiments_app.command("list")
def experiments_list(as_json: bool = JSON,
                     evidence: bool = typer.Option(False, help="Only valid experiments (evidence).")):
    """Experiments, with their valid flag."""
    with _ledger() as ledger:
        rows = ledger.evidence() if evidence else ledger.experiments()
        emit(rows, as_json, lambda rs: [experiment_line(e) for e in rs] or ["no experiments"])


@experiments_app.command("show")
def experiments_show(experiment: str = typer.Argument(..., help="Experiment id or name."), as_json: bool = JSON):
    """One experiment: its runs and evals, its conclusions (skillos's and any added beside it), each
    checkpoint with the training metrics logged at its step and its sweep results, imported runs marked."""
    from skillos.evals.recall import experiment_detail

    with _ledger() as ledger:
        emit(experiment_detail(ledger, ledger.resolve_experiment(experiment)), as_json, experiment_detail_lines)


@experiments_app.command("conclude")
def experiments_conclude(experiment_id: int, text: str = typer.Option(..., "--text",
                         help="The conclusion, with the numbers it rests on.")):
    """Add your conclusion beside the one skillos wrote from the verdicts when the eval finished
    (it never replaces it; every conclusion stays, with who wrote it and when)."""
    from skillos.ledger.store import SKILLOS, actor

    if not text.strip():
        raise SkillosError("experiments conclude: --text is empty")
    who = actor()
    with _ledger() as ledger:
        ledger.correct("experiments", experiment_id, "conclusion", "concluded", value=text,
                       actor="agent" if who == SKILLOS else who)
        ledger.correct("experiments", experiment_id, "status", "concluded", value="concluded")
        emit(ledger.experiment(experiment_id), False, lambda e: [experiment_line(e)])


@experiments_app.command("add")
def experiments_add(name: str = typer.Option(...), hypothesis: str = typer.Option(""),
                    success_metric: str = typer.Option(""), as_json: bool = JSON):
    """Register an experiment before running it."""
    with _ledger() as ledger:
        eid = ledger.add_experiment(name, hypothesis, success_metric)
        emit(ledger.experiment(eid), as_json, lambda e: [experiment_line(e)])


@fixes_app.command("add")
def fixes_add(
    failure: int = typer.Option(..., help="The failure this fixes."),
    description: str = typer.Option(..., help="What the fix changes."),
    metric: str = typer.Option("success_rate", help="The number the fix should move, the one the failure "
                               "named: success_rate | coercion_rate | unmeasured_rate."),
    direction: str = typer.Option("up", help="up or down"),
    expected: Optional[float] = typer.Option(None, help="Expected size of the move (0.1 = 10 pts)."),
    before: int = typer.Option(..., help="The run before the fix."),
    as_json: bool = JSON,
):
    """Record a fix and what it should move; verify it later with `ledger verify-fix`."""
    with _ledger() as ledger:
        fid = ledger.add_fix(failure, description, metric, direction, expected, before)
        emit(ledger.fix(fid), as_json, lambda f: [f"fix #{f['id']} for failure #{f['failure_id']}: "
                                                  f"{f['metric']} should go {f['direction']}"])


@app.command("verify-fix")
def verify_fix(fix_id: int, after: int = typer.Option(..., help="The run after the fix: begun after the fix was "
                                                     "recorded (an earlier run ran without it and is refused)."),
               as_json: bool = JSON):
    """Gate 6: a fix is verified only if the number moved (paired before/after).

    Otherwise the failure is reopened with the numbers, and the exit code is 1.
    """
    from skillos.config.schema import Config
    from skillos.evals.verify import verify_fix as verify

    settings = Config().eval  # the schema's statistics settings
    with _ledger() as ledger:
        result = verify(ledger, fix_id, after, alpha=settings.alpha, power=settings.power,
                        n_boot=settings.bootstrap)
    emit(result, as_json, lambda r: [r["detail"]])
    if not result["verified"]:
        raise typer.Exit(1)


@app.command("invalidate")
def invalidate(table: str = typer.Argument(..., help="experiments, runs, evals, failures or fixes"),
               row_id: int = typer.Argument(...),
               reason: str = typer.Option(..., help="Why it is no longer evidence.")):
    """Mark a record invalid (a correction row): gates and reports stop treating it as evidence."""
    with _ledger() as ledger:
        ledger.correct(table, row_id, "invalidate", reason)
        emit(reason, False, lambda why: [f"{table} #{row_id} invalidated: {why}"])


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
    emit(data, as_json, failure_stats_lines)


@app.command("canaries")
def canaries(as_json: bool = JSON):
    """Per trainer: the code hash its last passing canary covers, and whether it still covers the
    code installed now (gate 6 recomputes it the same way)."""
    from skillos.cli_render import canary_standing_lines
    from skillos.gates.learning import standing

    with _ledger() as ledger:
        data = standing(ledger)
    emit(data, as_json, canary_standing_lines)


@app.command("watch")
def watch(live: bool = typer.Option(False, "--live", help="Only the watches whose watchdog runs now."),
          as_json: bool = JSON):
    """Gate 7's watches, live and past: each launch's watchdog, its job, its alarms, and how long it
    goes on after the job (compute.watch_after_minutes); a watch recorded as running whose watchdog
    is gone is LOST."""
    with _ledger() as ledger:
        rows = [w for w in ledger.watches() if w["state"] == "watching" or not live]
    emit(rows, as_json, watch_lines)


@app.command("approvals")
def approvals(as_json: bool = JSON):
    """Every approved plan, with who approved it, at which terminal, under which processes, and
    what in that record suggests it was not a person at their terminal."""
    from skillos.ledger.postmortem import person_step_line
    from skillos.person import forged

    with _ledger() as ledger:
        rows = ledger.approvals()
    data = [{k: r[k] for k in ("id", "plan_sha256", "actor", "created_at", "witness")}
            | {"plan_hash": r["config_hash"], "suspect": forged(r["witness"])} for r in rows]
    emit(data, as_json, lambda rows: [person_step_line(
        {"what": f"approval #{r['id']} of plan hash {r['plan_hash']}", "actor": r["actor"],
         "created_at": r["created_at"], "witness": r["witness"]}) for r in rows] or ["no plan approved"])


@app.command("modes")
def modes(as_json: bool = JSON):
    """The failure categories and cross-cutting modes, with a line each."""
    from skillos.ledger import taxonomy

    data = {"categories": taxonomy.CATEGORIES, "modes": taxonomy.MODES}
    emit(data, as_json, taxonomy_lines)


@app.command("goal")
def goal(text: Optional[str] = typer.Argument(None, help="A new project goal: a person sets it, at an "
                                              "interactive terminal, by typing its confirmation."),
         list_: bool = typer.Option(False, "--list", help="Every goal ever set, oldest first, with who set it and when."),
         as_json: bool = JSON):
    """Show the project goal (agents read it); a person sets a new one at their terminal."""
    import secrets

    from skillos.cli_common import person_confirms
    from skillos.cli_render import goal_lines

    if text is not None and list_:
        raise SkillosError("ledger goal: give a new goal or --list, not both")
    if text is not None:
        if not text.strip():
            raise SkillosError("ledger goal: the goal is empty")
        with _ledger() as ledger:
            current = ledger.goal()
        seen = person_confirms("set the project goal", secrets.token_hex(3), [
            f"current goal: {current['text'] if current else '(none)'}", f"new goal: {text}"])
        with _ledger() as ledger:
            ledger.set_goal(text, seen["user"], seen)
    with _ledger() as ledger:
        if list_:
            emit(ledger.goals(), as_json, lambda rows: [goal_lines(g) for g in rows] or ["no goal set"])
        else:
            emit(ledger.goal(), as_json, lambda g: [g["text"] if g else "no goal set"])
