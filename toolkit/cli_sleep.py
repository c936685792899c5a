"""`skillos sleep ...`: learn a skill from the agent's own Claude Code and Codex sessions. Each
command parses, calls one library function in skillos.training.textopt.sleep, and renders."""

from __future__ import annotations

import secrets
import shlex
import sys
from pathlib import Path
from typing import List, Optional

import typer

from skillos import cli_render as render
from skillos.cli_common import JSON, OVERRIDE, RUNS_OUT, SET, emit, end_on_sigterm, load_config, person_confirms

app = typer.Typer(help="Learn skills from your own Claude Code and Codex sessions: harvest, mine checkable "
                  "tasks, replay, gate, stage a proposal that only a person adopts.", no_args_is_help=True)

CONFIG = typer.Option(None, "--config", help="A config with a sleep: section (default: the defaults).")


def _err(line: str) -> None:
    typer.echo(line, err=True)


def _load(config: Optional[Path], source=None, project=None, since=None, max_sessions=None, subagents=None):
    from skillos.config.loading import load
    from skillos.config.schema import Config

    cfg = load(config) if config else Config()
    s = cfg.sleep
    s.sources = list(source) if source else s.sources
    s.project = project if project is not None else s.project
    s.since = since if since is not None else s.since
    s.max_sessions = max_sessions if max_sessions is not None else s.max_sessions
    s.subagents = subagents if subagents is not None else s.subagents
    return cfg


SOURCE = typer.Option([], "--source", help="claude or codex (repeatable; default: the config's sources).")
PROJECT = typer.Option(None, "--project", help="Only sessions whose working directory contains this.")
SINCE = typer.Option(None, "--since", help="Only sessions started on or after this ISO date.")
MAX_SESSIONS = typer.Option(None, "--max-sessions", help="The most recent N sessions.")
SUBAGENTS = typer.Option(None, "--subagents/--no-subagents", help="Also read Claude Code sub-agent sessions.")


@app.command("harvest")
def harvest_cmd(config: Optional[Path] = CONFIG, source: List[str] = SOURCE, project: Optional[str] = PROJECT,
                since: Optional[str] = SINCE, max_sessions: Optional[int] = MAX_SESSIONS,
                subagents: Optional[bool] = SUBAGENTS, as_json: bool = JSON):
    """Read Claude Code and Codex sessions (read-only, offline, secrets redacted) into a digest;
    print the counts per source and what was skipped and why."""
    from skillos.safety import Ticker
    from skillos.training.textopt.sleep.harvest import harvest
    from skillos.training.textopt.sleep.night import sleep_section
    from skillos.training.textopt.sleep.stage import sleep_home

    cfg = _load(config, source, project, since, max_sessions, subagents)
    summary = harvest(sleep_section(cfg), sleep_home(cfg.sleep),
                      progress=Ticker(_err, "harvest: transcript files read")).summary()
    emit(summary, as_json, lambda d: render.harvest_lines(d, cfg.sleep))


@app.command("mine")
def mine_cmd(config: Optional[Path] = CONFIG, tasks: Optional[Path] = typer.Option(
                 None, "--tasks", help="A reviewed task file (JSONL) instead of mining."),
             source: List[str] = SOURCE, project: Optional[str] = PROJECT, since: Optional[str] = SINCE,
             max_sessions: Optional[int] = MAX_SESSIONS, subagents: Optional[bool] = SUBAGENTS,
             as_json: bool = JSON):
    """Mine checkable tasks (repeated, corrected, or made of a skill) and their splits; read-only."""
    from skillos.training.textopt.sleep.mine import assign_splits
    from skillos.training.textopt.sleep.night import gather

    cfg = _load(config, source, project, since, max_sessions, subagents)
    found, info = gather(cfg, tasks)
    splits = assign_splits(found, cfg.sleep.validation_share, cfg.sleep.test_share)
    data = {"source": info["source"], "sessions": info["sessions"], "mined": info["mined"],
            "splits": {k: len(v) for k, v in splits.items()}, "tasks": [t.to_dict() for t in found]}
    emit(data, as_json, render.mined_lines)


@app.command("night")
def night_cmd(config: Path = typer.Argument(..., help="A config with a sleep: section (sleep.skill, sleep.model)."),
              tasks: Optional[Path] = typer.Option(None, "--tasks", help="A reviewed task file instead of mining."),
              dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and its worst-case cost; "
                                           "spend nothing."),
              override: List[str] = OVERRIDE,
              unseal: Optional[str] = typer.Option(None, "--unseal", help="A person's reason to read test tasks "
                                                   "an earlier night already read as the test (recorded in the "
                                                   "ledger as an override)."),
              set_: List[str] = SET,
              as_json: bool = JSON):
    """One night: harvest, mine, replay current vs candidate, gate on validation, read the sealed
    test once, stage a proposal. Never writes the live skill. A test task one night read is sealed
    in the ledger by its content hash: later nights leave it out unless --unseal gives a reason."""
    from skillos import api, gates
    from skillos.training.textopt.sleep.night import plan_night

    cfg = load_config(config, set_)
    if dry_run:
        plan = plan_night(cfg, tasks)
        emit(plan, as_json, render.night_plan_lines)
        return
    end_on_sigterm()  # kill PID: the night ends as aborted in the ledger, not "running"
    report = api.sleep(cfg, overrides=gates.parse_overrides(override), tasks_file=tasks, echo=_err, unseal=unseal)
    emit(report, as_json, render.night_lines)


@app.command("transfer")
def transfer_cmd(skill: Path = typer.Argument(..., help="The skill (a SKILL.md, or the folder holding it)."),
                 tasks: Path = typer.Option(..., "--tasks", help="A reviewed task file (JSONL: prompt and checks), "
                                            "e.g. a staged proposal's tasks.jsonl."),
                 out: Path = RUNS_OUT,
                 config: Optional[Path] = CONFIG, set_: List[str] = SET, as_json: bool = JSON):
    """Run each task in a real coding-agent CLI (sleep.transfer.agent: claude -p, codex exec) with the
    skill installed where the agent discovers skills and without it, grade both by the task's
    checks, and compare them paired. Refused before any run when it needs more than
    sleep.transfer.max_calls runs, or when the agent's CLI is not installed."""
    from skillos.training.textopt.sleep.transfer import transfer

    from skillos.config.loading import with_sets
    from skillos.config.schema import Config

    cfg = load_config(config, set_) if config else with_sets(Config(), set_)
    report = transfer(cfg, skill, tasks, out, echo=_err)
    emit(report, as_json, render.agent_transfer_lines)


@app.command("adopt")
def adopt_cmd(proposal: Path = typer.Argument(..., help="A proposal folder (or its name under proposals/)."),
              skill: Optional[Path] = typer.Option(None, "--skill", help="The live skill folder to install into "
                                                   "(default: the one the night improved)."),
              undo: bool = typer.Option(False, "--undo", help="Put the backup back (also finishes undoing an adopt "
                                        "that crashed between its writes)."),
              config: Optional[Path] = CONFIG, as_json: bool = JSON):
    """Back up the live skill and install the proposal atomically: a person's step, at an interactive
    terminal outside any coding agent, confirmed by typing the code shown (as `skillos approve`). An
    adopt that crashed between its writes is completed by running it again, or undone with --undo."""
    from skillos.training.textopt.sleep.stage import adopt, sleep_home

    cfg = _load(config)
    step = "undo an adopted sleep proposal" if undo else "adopt a sleep proposal into the live skill"
    person_confirms(step, secrets.token_hex(4), [
        f"{'undo' if undo else 'adopt'} {proposal}" + (f" into {skill}" if skill else " into the skill its night improved"),
        "the live skill is backed up first; `skillos sleep adopt PROPOSAL --undo` puts the backup back"])
    meta = adopt(proposal, sleep_home(cfg.sleep), skill, undo=undo)
    emit(meta, as_json, lambda m: render.adopt_lines(m, undo))


@app.command("status")
def status_cmd(config: Optional[Path] = CONFIG, as_json: bool = JSON):
    """Nights and proposals, adopted or not."""
    from skillos.ledger.store import default_path
    from skillos.training.textopt.sleep.stage import recover_nights, sleep_home, status

    home = sleep_home(_load(config).sleep)
    if default_path().is_file():  # a night killed mid-run is recorded as aborted when next looked at
        from skillos.ledger import Ledger

        with Ledger() as ledger:
            recover_nights(home, ledger)
    else:
        recover_nights(home)
    data = status(home)
    emit(data, as_json, render.sleep_status_lines)


@app.command("schedule")
def schedule_cmd(config: Path = typer.Argument(..., help="The night's config."),
                 at: str = typer.Option("03:00", "--at", help="Local time HH:MM of the nightly run."),
                 install: bool = typer.Option(False, "--install", help="Add the line to your crontab."),
                 as_json: bool = JSON):
    """Print the cron line of a nightly run (or install it with --install)."""
    import os
    import subprocess

    from skillos.errors import SkillosError
    from skillos.ledger.store import default_path

    hour, sep, minute = at.partition(":")
    if not (sep and hour.isdigit() and minute.isdigit() and int(hour) < 24 and int(minute) < 60):
        raise SkillosError(f"--at: expected HH:MM, got {at!r}")
    config = config.resolve()
    if not config.is_file():
        raise SkillosError(f"{config}: no such config file")
    home = Path(os.environ.get("SKILLOS_HOME") or default_path().parent).resolve()
    log = home / "sleep" / "cron.log"
    command = (f"cd {shlex.quote(str(Path.cwd()))} && SKILLOS_HOME={shlex.quote(str(home))} "
               f"{shlex.quote(sys.executable)} -m skillos sleep night {shlex.quote(str(config))} --json "
               f">> {shlex.quote(str(log))} 2>&1")
    if "\n" in command or "\r" in command:
        raise SkillosError("a path of the cron line holds a line break; cron cannot run it")
    # cron turns an unescaped % into a newline (and feeds the rest to stdin): every % is escaped
    line = f"{int(minute)} {int(hour)} * * * " + command.replace("%", "\\%")
    installed = False
    if install:
        current = subprocess.run(["crontab", "-l"], capture_output=True, text=True)
        existing = current.stdout if current.returncode == 0 else ""
        if line not in existing.splitlines():
            log.parent.mkdir(parents=True, exist_ok=True)
            done = subprocess.run(["crontab", "-"], input=existing.rstrip("\n") + ("\n" if existing.strip() else "")
                                  + line + "\n", text=True, capture_output=True)
            if done.returncode != 0:
                raise SkillosError(f"crontab: {done.stderr.strip() or 'could not install the line'}")
        installed = True
    emit({"cron": line, "installed": installed}, as_json,
          lambda d: [d["cron"]] + (["installed in your crontab"] if d["installed"] else []))
