"""`skillos gate check`: the launch gates on a config, without launching anything."""

from __future__ import annotations

from pathlib import Path
from typing import List

import typer

from skillos.cli_common import JSON, SET, emit, load_config

gate_app = typer.Typer(help="The seven launch gates: check a config before spending compute.",
                       no_args_is_help=True)


@gate_app.command("check")
def gate_check(
    config: Path = typer.Argument(..., help="Experiment or training config (YAML)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Also run the checks that execute code: "
                                 "tool surface, reward arithmetic, a few real rollouts, the task "
                                 "distribution, split hashes, free disk."),
    trace: bool = typer.Option(False, "--trace", help="Also show, for every config key a check read, where "
                               "it goes and what arrives there (the trainer's arguments, the backend's "
                               "request or sampling call, the prompt, the retrieval call), built without "
                               "running anything; a key checked but not applied FAILs. The dry-run traces too "
                               "(with --json: a \"trace\" list of {key, value, consumer, arrived, applied, detail})."),
    verbose: bool = typer.Option(False, "--verbose", help="Also print the SKIP rows (the summary counts them; "
                                 "--json holds every row)."),
    as_json: bool = JSON,
    set_: List[str] = SET,
):
    """PASS / WARN / FAIL / SKIP per check, with its gate, key, seen and expected values.

    Exit 0: nothing failed; 1: a check failed (refused); 2: the config is unreadable; 3: no check
    failed but some could not run for what this machine lacks (data, an API key, an extra: the
    report's "missing" says which). --json always prints the rows. Static checks take well under a
    second and import nothing heavy (--trace builds the trainer's arguments: trl).
    """
    from skillos import api
    from skillos.cli_render import gate_lines

    try:
        report = api.check(load_config(config, set_), dry_run=dry_run, echo=None if as_json else typer.echo,
                           trace=trace, partial=True, verbose=verbose)
    except api.GateRefused as refused:
        report = refused.report
    emit(report.to_dict(), as_json, lambda _: gate_lines(report, config, trace)
         + ([f"not judged: this machine lacks what some checks need: {report.missing}"] if report.missing else []))
    raise typer.Exit(report.exit_code)
