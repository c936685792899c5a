"""`skillos import`: other tools' per-game results as ledger runs (evals/imported.py)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from skillos.cli_common import JSON


def import_cmd(
    files: List[Path] = typer.Argument(..., help="Per-game result files: JSONL (mapped by the flags or --mapping) "
                                                "inspect_ai .eval / .json logs, or skill-creator "
                                                "benchmark.json."),
    experiment: str = typer.Option(..., "--experiment", help="The experiment the runs are recorded under; "
                                                            "`compare --family NAME` re-tests them."),
    mapping: Optional[Path] = typer.Option(None, "--mapping", help="A YAML file of the keys below "
                                                                  "(game, success, arm, arms, trial, scorer, unit)."),
    game_col: Optional[str] = typer.Option(None, "--game-col", help="The game id's field (default game_id)."),
    success_col: Optional[str] = typer.Option(None, "--success-col", help="The success field (default success)."),
    arm_col: Optional[str] = typer.Option(None, "--arm-col", help="The arm's field (default arm; a file "
                                                                 "without it is one arm, named after the file)."),
    trial_col: Optional[str] = typer.Option(None, "--trial-col", help="JSONL: the trial's field; the rows of "
                                                                     "one game and arm are its trials, paired "
                                                                     "by game, never by trial."),
    scorer: Optional[str] = typer.Option(None, "--scorer", help="inspect logs: the scorer whose value is success."),
    unit: Optional[str] = typer.Option(None, "--unit", help="skill-creator benchmark.json: what one trial of an "
                                                           "eval scores (each eval is one unit, its runs its "
                                                           "trials): pass_rate (default), run (1 when all its "
                                                           "expectations passed) or expectation (each one a trial)."),
    env: Optional[str] = typer.Option(None, "--env", help="The environment the games were played in, for the record."),
    as_json: bool = JSON,
):
    """Record per-game results written by other tools as runs of one experiment, marked imported
    (source files and their sha256), so `skillos compare ARM --control ARM --family NAME`
    re-tests them; games that cannot be paired are counted by compare, never guessed."""
    from skillos import cli_render as render
    from skillos.api import import_runs
    from skillos.cli_common import emit

    result = import_runs(files, experiment=experiment, mapping=mapping, env=env, game=game_col,
                         success=success_col, arm=arm_col, trial=trial_col, scorer=scorer, unit=unit)
    emit(result, as_json, render.import_lines)
