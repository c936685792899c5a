"""`skillos export inspect`: a run's games as an inspect_ai eval log."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from skillos.cli_common import JSON, emit

app = typer.Typer(help="Export runs to other tools' formats.", no_args_is_help=True)


@app.command("inspect")
def export_inspect(
    run_dir: Path = typer.Argument(..., help="A run folder (games.jsonl, trajectories.jsonl)."),
    out: Path = typer.Argument(..., help="The eval log to write (.eval or .json)."),
    phase: str = typer.Option("eval", help="eval (held-out games) or train."),
    as_json: bool = JSON,
):
    """A run's games as an inspect_ai eval log, one sample per game (`inspect view` opens it);
    unmeasured games are unscored. Needs the inspect extra (pip install skillos[inspect])."""
    from skillos.cli_render import export_lines
    from skillos.view.inspect_log import export_run

    emit(export_run(run_dir, out, phase), as_json, export_lines)
