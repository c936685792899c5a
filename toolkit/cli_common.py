"""What every CLI module shares: JSON on stdout, one-line progress on stderr, loading a config
with --set, the progress bars of a run."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List

import typer
from rich.console import Console

SET_HELP = "KEY=VALUE: set a config key, e.g. --set env.n_games=6 (repeatable; validated as the file)."
err = Console(stderr=True)


def print_json(data) -> None:
    sys.stdout.write(json.dumps(data, indent=1, default=str) + "\n")


def echo_err(line: str) -> None:
    typer.echo(line, err=True)  # one unwrapped line each: agents grep these


def load_config(config: Path, sets: List[str], n_games=None, n_train_games=None):
    """The config file with --set (and the --n-games / --n-train-games shorthands) applied."""
    from skillos import api

    sets = list(sets)
    sets += [f"env.n_games={n_games}"] if n_games is not None else []
    sets += [f"env.n_train_games={n_train_games}"] if n_train_games is not None else []
    return api.load(config, sets)


class ProgressBars:
    """The rich progress bars of a run, on stderr: the `progress` callback of skillos.evaluate."""

    def __enter__(self):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=err, transient=False)
        self.bar.__enter__()
        self.tasks = {}
        return self

    def __exit__(self, *exc):
        self.bar.__exit__(*exc)

    def __call__(self, arm, phase, done, total, live=""):
        label = f"generating {phase} games" if arm == "generate" else f"{arm} · {phase} games"
        if (arm, phase) not in self.tasks:
            self.tasks[(arm, phase)] = self.bar.add_task(label, total=total)
        self.bar.update(self.tasks[(arm, phase)], completed=done,
                        description=f"{label} · {live}" if live else label)


