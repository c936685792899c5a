"""The `skillos` command: thin over the library. Parse, call, print (rich tables, or --json)."""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from skillos.cli_ledger import app as ledger_app
from skillos.errors import SkillosError

app = typer.Typer(
    help="skillos: research on agent skills (SKILL.md). Curate, optimize and evaluate skill repos "
    "on the real ALFWorld engine with paired statistics.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
skills_app = typer.Typer(help="Validate and search skill repos (folders of NAME/SKILL.md).",
                         no_args_is_help=True)
app.add_typer(skills_app, name="skills")
app.add_typer(ledger_app, name="ledger")

out = Console()
err = Console(stderr=True)


def _print_json(data) -> None:
    sys.stdout.write(json.dumps(data, indent=1, default=str) + "\n")


@skills_app.command("validate")
def skills_validate(path: Path = typer.Argument(..., help="A SKILL.md file or a folder of skills.")):
    """Check frontmatter and names; one line per problem, exit 1 if any."""
    from skillos.repo import validate_path

    problems = validate_path(path)
    for problem in problems:
        typer.echo(problem)
    if problems:
        raise typer.Exit(1)
    typer.echo(f"{path}: valid")


@skills_app.command("search")
def skills_search(
    folder: Path = typer.Argument(..., help="A skill repo folder."),
    query: str = typer.Argument(..., help="What the agent is about to do, e.g. a task sentence."),
    k: int = typer.Option(5, "-k", help="How many skills to return."),
    mode: str = typer.Option("bm25", help="bm25, or shuffled (k random skills: a control)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
):
    """Top-k skills for a query, by BM25 over name + description + body."""
    from skillos.repo import SkillRepo, retrieve

    if not folder.is_dir():
        raise SkillosError(f"{folder}: no such skill repo folder")
    if mode not in ("bm25", "shuffled"):
        raise SkillosError(f"--mode {mode!r}: choose bm25 or shuffled")
    hits = retrieve(SkillRepo.load(folder), query, k, mode)
    if as_json:
        _print_json([{"name": h.skill.name, "score": h.score, "description": h.skill.description}
                     for h in hits])
        return
    if not hits:
        typer.echo("no skill matches")
    for h in hits:
        typer.echo(f"{h.score:7.3f}  {h.skill.name}  {h.skill.description}")


def _run(cfg, out_dir: Optional[Path], as_json: bool) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from skillos.evals.experiment import run_eval
    from skillos.evals.report import render

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=False) as bar:
        tasks = {}

        def progress(arm, phase, done, total):
            key = (arm, phase)
            label = f"generating {phase} games" if arm == "generate" else f"{arm} · {phase} games"
            if key not in tasks:
                tasks[key] = bar.add_task(label, total=total)
            bar.update(tasks[key], completed=done)

        from skillos.ledger import Ledger

        with Ledger() as ledger:  # $SKILLOS_HOME/ledger.db: every eval records itself
            result = run_eval(cfg, out_dir, progress, ledger=ledger)
    if as_json:
        _print_json(result)
    else:
        render(result, out)


@app.command("eval")
def eval_cmd(
    config: Path = typer.Argument(..., help="Experiment config (YAML)."),
    n_games: Optional[int] = typer.Option(None, help="Override env.n_games (held-out games per arm)."),
    n_train_games: Optional[int] = typer.Option(None, help="Override env.n_train_games."),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="Output folder (default runs/NAME-TIME)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
):
    """Run every arm of CONFIG on the same held-out games and print the paired comparison."""
    from skillos import config as cfgmod

    cfg = cfgmod.load(config)
    _apply_overrides(cfg, n_games, n_train_games)
    _run(cfg, out_dir, as_json)


@app.command("quickstart")
def quickstart(
    n_games: Optional[int] = typer.Option(None, help="Held-out games per arm (default 60)."),
    n_train_games: Optional[int] = typer.Option(None, help="Train games to curate from (default 60)."),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="Output folder (default runs/quickstart-TIME)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
):
    """The main job: no_memory vs closed_loop on held-out ALFWorld games, no API key, CPU only.

    A heuristic executor plays generated ALFWorld games (real TextWorld engine); a heuristic
    curator writes SKILL.md files from train games, then keeps curating on held-out games.
    Prints success per arm and task type with denominators, the exact McNemar p, a paired
    bootstrap 95% CI and the minimum detectable effect. Same as `skillos eval` on
    evals/configs/quickstart.yaml.
    """
    import yaml

    from skillos import config as cfgmod

    path = resources.files("skillos.evals") / "configs" / "quickstart.yaml"
    cfg = cfgmod.from_dict(yaml.safe_load(path.read_text()))
    _apply_overrides(cfg, n_games, n_train_games)
    _run(cfg, out_dir, as_json)


@app.command("postmortem")
def postmortem_cmd(
    experiment: Optional[int] = typer.Argument(None, help="Experiment id (default: everything)."),
    run: Optional[int] = typer.Option(None, help="One run instead of an experiment."),
    since: Optional[str] = typer.Option(None, help="Only records since this date (YYYY-MM-DD)."),
    out_file: Optional[Path] = typer.Option(None, "--out", help="Write the markdown here."),
):
    """A markdown postmortem generated from the ledger.

    Timeline, failures by category and mode, cost, what each gate did, overrides and open items.
    """
    import datetime as dt

    from skillos.ledger import Ledger
    from skillos.ledger.postmortem import postmortem
    from skillos.repo.store import write_atomic

    if since:
        try:
            dt.date.fromisoformat(since[:10])
        except ValueError:
            raise SkillosError(f"--since {since!r}: expected a date like 2026-11-29") from None
    with Ledger() as ledger:
        text = postmortem(ledger, experiment, run, since)
    if out_file:
        write_atomic(out_file, text)
        typer.echo(f"postmortem written to {out_file}")
    else:
        sys.stdout.write(text)


@app.command("watch")
def watch(
    pid: List[int] = typer.Option([], "--pid", help="A process of the job (repeatable)."),
    path: List[Path] = typer.Option([], "--path", help="A log or checkpoint folder that should grow."),
    stall_minutes: float = typer.Option(15.0, help="No growth (or an idle device) this long is a stall."),
    idle_minutes: float = typer.Option(10.0, help="An idle box this long after the job ends alarms."),
    busy_percent: float = typer.Option(10.0, help="GPU (or CPU) use below this counts as idle."),
    gpus: int = typer.Option(0, help="GPUs on the box, to cost an idle box in GPU-hours."),
    interval: float = typer.Option(60.0, help="Seconds between looks."),
    max_ticks: Optional[int] = typer.Option(None, help="Stop after this many looks."),
):
    """Gate 7: watch the box, not the job.

    Alarms go to stdout and the ledger; stops when the job has ended and the box has been idle
    for --idle-minutes.
    """
    from skillos.ledger import Ledger
    from skillos.ledger.watchdog import Watchdog, WatchConfig

    if not pid and not path:
        raise SkillosError("watch needs at least one --pid or --path")
    config = WatchConfig(list(pid), [str(p) for p in path], stall_minutes, idle_minutes,
                         busy_percent, gpus)
    with Ledger() as ledger:
        alarms = Watchdog(config, ledger=ledger, echo=typer.echo).run(interval, max_ticks)
    recorded = sum(a.kind != "process-exited" for a in alarms)
    typer.echo(f"watch ended: {len(alarms)} alarm(s), {recorded} recorded as failures in {ledger.path}")


def _apply_overrides(cfg, n_games, n_train_games) -> None:
    from skillos import config as cfgmod

    if n_games is not None:
        cfg.env.n_games = n_games
    if n_train_games is not None:
        cfg.env.n_train_games = n_train_games
    cfgmod.validate(cfg)


def main() -> None:
    """Console entry point: user mistakes are one line on stderr and a non-zero exit.

    Click handles its own usage errors (exit 2 with usage); everything a command raises as a
    SkillosError lands here instead of as a traceback."""
    try:
        app()
    except SkillosError as exc:
        sys.stderr.write(f"error: {exc}\n")  # one line, never wrapped
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
