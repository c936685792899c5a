"""What every CLI module shares: `emit` (the one way a command prints its result), the options
several commands take (defined once here), one-line progress on stderr, loading a config with
--set, the progress bars of a run."""

from __future__ import annotations

import contextlib
import re
import shlex
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, List

import typer
from rich.console import Console

SET_HELP = "KEY=VALUE: set a config key, e.g. --set env.n_games=6 (repeatable; validated as the file)."
OVERRIDE_HELP = ('CHECK="reason": launch despite a failing gate check; the override and its reason '
                 "are recorded in the ledger as a process failure (repeatable).")

# The options several commands share, defined once (typer reads an Option object as a default
# and never mutates it, so one object serves every command).
JSON = typer.Option(False, "--json", help="Machine-readable output: the result as JSON on stdout.")
SET = typer.Option([], "--set", help=SET_HELP)
OVERRIDE = typer.Option([], "--override", help=OVERRIDE_HELP)
OUT = typer.Option(None, "--out", help="Output folder (default: a new one under runs/, named after the "
                   "experiment and the time).")
NEW_OUT = typer.Option(..., "--out", help="A new folder for the rows, snapshot and report.")
RUNS_OUT = typer.Option(..., "--out", help="A new folder for rows.jsonl and report.json.")
OUT_FILE = typer.Option(None, "--out", help="Write the markdown here.")
PLAN_OUT = typer.Option(None, "--out", help="Where to write the plan (default: "
                        "$SKILLOS_HOME/plans/EXPERIMENT-CONFIGHASH.json).")
RESUME = typer.Option(False, "--resume", help="Continue the run in --out: finished work is not done again.")
OVERWRITE = typer.Option(False, "--overwrite", help="Delete what is in --out and start over.")
HOME = typer.Option(None, "--home", help="Folder of ledger.db (default $SKILLOS_HOME or .skillos).")
RUNS = typer.Option(None, "--runs", help="Folder of run folders (default runs/).")
WIDE = 400  # columns off a terminal: rich would cut table cells at 80 in a pipe


def console(stderr: bool = False) -> Console:
    """A rich console; off a terminal (a pipe, a file, CI) as wide as the lines are (never cut at
    80 columns) unless COLUMNS says otherwise."""
    import os

    plain = Console(stderr=stderr)
    if plain.is_terminal or os.environ.get("COLUMNS"):
        return plain
    return Console(stderr=stderr, width=WIDE)


err = console(stderr=True)


def emit(data, as_json: bool, lines: Callable[[Any], Iterable[str]] | None = None, *,
         show: Callable[[Any], None] | None = None) -> None:
    """The one way a command prints its result. With --json: `data` as JSON on stdout through
    the redacting printer (no Infinity/NaN tokens, no secrets). Else `show(data)` for a renderer
    that draws itself (rich tables), or each of `lines(data)` as one unwrapped line (agents grep
    them), redacted too: a key in a reason or a path must not reach a terminal either."""
    if as_json:
        from skillos.safety import json_text

        sys.stdout.write(json_text(data) + "\n")
    elif show is not None:
        show(data)
    elif lines is not None:
        from skillos.secrets import redact_text

        for line in lines(data):
            typer.echo(terminal_text(redact_text(line)))


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # all but tab and newline


def terminal_text(text: str) -> str:
    """A line as a terminal may show it: control characters (an escape sequence that clears the
    screen or moves the cursor, from a config, a plan file or a ledger row) written as \\xNN."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def end_on_sigterm() -> None:
    """`kill PID` ends a long command as Ctrl-C's sibling: SystemExit(143) unwinds it, so its
    ledger run says it was stopped instead of "running" forever."""
    import signal

    def terminated(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminated)


def echo_err(line: str) -> None:
    typer.echo(line, err=True)  # one unwrapped line each: agents grep these


def load_config(config: Path, sets: List[str], n_games=None, n_train_games=None):
    """The config file with --set (and the --n-games / --n-train-games shorthands) applied."""
    from skillos import api

    sets = list(sets)
    sets += [f"env.n_games={n_games}"] if n_games is not None else []
    sets += [f"env.n_train_games={n_train_games}"] if n_train_games is not None else []
    return api.load(config, sets)


@contextlib.contextmanager
def resumable(out_dir: Path):
    """Ctrl-C during a run prints the exact command that continues it, and exits 130."""
    # The command line as typed, read before the run: ALFWorld's planner (fast_downward's
    # pddl2sas) overwrites sys.argv with ["translate.py", "domain", "task"] when it translates a game.
    argv = list(sys.argv[1:])
    try:
        yield
    except KeyboardInterrupt:
        again = [a for a in argv if a not in ("--resume", "--overwrite")]
        if "--out" not in again:
            again += ["--out", str(out_dir)]
        err.print(f"interrupted; continue with: skillos {' '.join(map(shlex.quote, again))} --resume",
                  markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(130) from None


class PlainProgress:
    """Progress as plain lines, for a stderr that is not a terminal (pipes, CI, an agent's
    shell): a bar there collapses to `━━ … 0:…`. One line per ~10% or per 10 s, and at the end of
    each phase."""

    def __init__(self):
        self.shown: dict = {}

    def __call__(self, arm, phase, done, total, live=""):
        import time

        label = f"generating {phase} games" if arm == "generate" else f"{arm} · {phase} games"
        step = max(1, total // 10)
        last, when = self.shown.get((arm, phase), (-1, 0.0))
        now = time.monotonic()
        if done == total or done // step != last // step or last < 0 or (done != last and now - when >= 10):
            self.shown[(arm, phase)] = (done, now)
            typer.echo(f"{label}: {done}/{total}" + (f" · {live}" if live else ""), err=True)


class ProgressBars:
    """The rich progress bars of a run, on stderr: the `progress` callback of skillos.evaluate.
    Plain lines instead when stderr is not a terminal."""

    def __new__(cls):
        if not err.is_terminal:
            return _Plain()
        return super().__new__(cls)

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




class _Plain(PlainProgress):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def person_confirms(step: str, code: str, show: Iterable[str]) -> dict:
    """A person's step (approving a plan, setting the goal): only at an interactive terminal, not
    inside a coding agent's shell, and only when the person types `code` back (draw it fresh for
    each step: secrets.token_hex). Returns the witness (toolkit/person.py: `user`, the real login,
    the terminal, the process ancestry) the caller records beside the step. What this stops and
    what it cannot: toolkit/person.py. A refusal names the step and nothing else."""
    from skillos import person
    from skillos.errors import Refused

    seen = person.witness()
    refused = person.refusal(step, seen)
    if refused:
        raise Refused(refused)
    for line in show:
        typer.echo(terminal_text(line))
    try:
        typed = input(f"Type {code} to confirm ({step}), anything else to cancel: ")
    except EOFError:
        typed = ""
    if typed.strip() != code:
        raise Refused(f"{step}: not confirmed (typed {typed.strip()[:20]!r}, expected {code}); nothing recorded")
    return seen
