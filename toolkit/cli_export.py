"""`skillos export inspect`: a run's games as an inspect_ai eval log; `skillos export skill-creator`:
as Anthropic skill-creator's benchmark.json; `skillos export eval-results`: as Hugging Face
.eval_results files; `skillos export report`: an experiment or a sweep as a
self-contained report (HTML with the plots, the numbers as CSV)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from skillos.cli_common import HOME, JSON, RUNS, emit

app = typer.Typer(help="Export runs to other tools' formats.", no_args_is_help=True)


@app.command("inspect")
def export_inspect(
    run_dir: Path = typer.Argument(..., help="A run folder (games.jsonl, trajectories.jsonl)."),
    out: Path = typer.Argument(..., help="The eval log to write (.eval or .json)."),
    phase: str = typer.Option("eval", help="eval (held-out games) or train."),
    as_json: bool = JSON,
):
    """A run's games as an inspect_ai eval log, one sample per game, an epoch per trial (`inspect view`
    opens it); unmeasured games are unscored. Needs the inspect extra (pip install skillos[inspect])."""
    from skillos.cli_render import export_lines
    from skillos.view.inspect_log import export_run

    emit(export_run(run_dir, out, phase), as_json, export_lines)


@app.command("skill-creator")
def export_skill_creator(
    run_dir: Path = typer.Argument(..., help="A run folder (games.jsonl) of two arms, or more with --arm."),
    out: Path = typer.Argument(..., help="The benchmark.json to write (a folder gets OUT/benchmark.json)."),
    arm: Optional[str] = typer.Option(None, "--arm", help="The arm written as with_skill (default: the one "
                                                          "arm besides the control)."),
    control: Optional[str] = typer.Option(None, "--control", help="The arm written as without_skill (default: "
                                                                  "the run's eval.control, else no_memory)."),
    as_json: bool = JSON,
):
    """A run's held-out games as Anthropic skill-creator's benchmark.json (its viewer's field names):
    one run per game per arm (one per trial: eval.trials), unmeasured games as runs with errors, wall time and tokens null
    (not measured), and skillos's paired comparison in the notes."""
    from skillos.cli_render import benchmark_lines
    from skillos.evals.skill_creator import export_benchmark

    emit(export_benchmark(run_dir, out, arm, control), as_json, benchmark_lines)


@app.command("eval-results")
def export_eval_results(
    run_dir: Path = typer.Argument(..., help="A run folder (games.jsonl)."),
    out: Path = typer.Argument(..., help="The model repo folder (files go to OUT/.eval_results/)."),
    dataset: Optional[str] = typer.Option(None, "--dataset", help="The Hub benchmark dataset id (default: "
                                                                  "skillos/ENV, the run's environment)."),
    task: Optional[str] = typer.Option(None, "--task", help="The benchmark's task id (default: the held-out split)."),
    source_url: Optional[str] = typer.Option(None, "--source-url", help="Where the run can be seen (default: "
                                                                        "the run folder's file URL)."),
    as_json: bool = JSON,
):
    """A run's arms as Hugging Face .eval_results/*.yaml, one file per arm (the control is the
    default variant): success in percent over measured games, the run's date, and the
    denominators and skillos's paired comparison in notes."""
    from skillos.cli_render import eval_results_lines
    from skillos.evals.eval_results import export_eval_results as write

    emit(write(run_dir, out, dataset, task, source_url), as_json, eval_results_lines)


@app.command("report")
def export_report(
    target: str = typer.Argument(..., help="A run folder with report.json (an eval or a sweep), or an "
                                 "experiment id or name in the ledger."),
    out: Path = typer.Argument(..., help="The report folder to write (report.html, arms.csv, comparisons.csv, "
                               "sweep.csv for a sweep)."),
    home: Optional[Path] = HOME,
    runs: Optional[Path] = RUNS,
    as_json: bool = JSON,
):
    """An experiment or a sweep as a folder to attach to a paper draft: report.html with the plots
    (opens from disk, no server, no network) and the numbers as CSV with their denominators and
    verdict words. Written whole or not at all; an earlier report in OUT is replaced."""
    from skillos.cli_render import report_lines
    from skillos.view.report import export_report as write

    emit(write(target, out, home, runs), as_json, report_lines)
