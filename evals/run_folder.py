"""A run folder: the one place its file names are defined, and the reads every launcher, resume
and the viewer share (is it in use, was it made with this config, did it finish).

A run folder holds config.yaml (the config as run), games.jsonl (one row per held-out game),
curation.jsonl (one row per train game a learning arm curated on), trajectories.jsonl (each
game's full trace, evals/trace.py), repo-ARM/ (an arm's curated repo) and report.json; a sweep
adds sweep.json, an optimize run history.jsonl. Light on purpose: the viewer imports it.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from skillos.errors import SkillosError
from skillos.safety import RunLock
from skillos import safety
from skillos.config.schema import identity
from skillos.evals.records import read_game_rows

CONFIG = "config.yaml"
REPORT = "report.json"
TRACES = "trajectories.jsonl"
SWEEP = "sweep.json"
HISTORY = "history.jsonl"  # an optimize run's candidates, one a line
ROW_FILES = {"train": "curation.jsonl", "eval": "games.jsonl"}  # phase -> its rows
GAMES = ROW_FILES["eval"]
REPO_PREFIX = "repo-"
RUN_MARKERS = (GAMES, ROW_FILES["train"], REPORT, SWEEP, HISTORY)  # a folder with one of these is a run


def repo_dir(out: Path, arm: str) -> Path:
    """Where a learning arm's curated repo lives in the run folder `out`."""
    return Path(out) / f"{REPO_PREFIX}{arm}"


def arm_of_repo(folder: Path) -> str | None:
    """The arm whose curated repo `folder` is (RUN/repo-ARM), or None for any other folder."""
    name = Path(folder).name
    return name[len(REPO_PREFIX):] if name.startswith(REPO_PREFIX) else None


def default_out_dir(cfg) -> Path:
    """runs/NAME-TIME, with a suffix if a run started in the same second already has it."""
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = Path(cfg.eval.output_dir) / f"{cfg.experiment.name}-{stamp}"
    out, n = base, 1
    while out.exists():
        n += 1
        out = base.with_name(f"{base.name}-{n}")
    return out


def holds_run(out: Path) -> bool:
    """Whether the folder `out` holds anything but a run lock (what a run left there)."""
    return out.is_dir() and any(p.name != RunLock.NAME for p in out.iterdir())


def check_out(out: Path, resume: bool = False, overwrite: bool = False) -> bool:
    """Whether `out` holds a previous run; refuses a non-empty folder without resume or
    overwrite, and a resume with nothing to resume. Cheap: launchers call it before the gates."""
    if out.exists() and not out.is_dir():
        raise SkillosError(f"{out}: is a file; the output folder must be a folder")
    if not out.exists():
        creatable(out)
    used = holds_run(out)
    if resume and not used:
        raise SkillosError(f"{out}: nothing to resume (the folder is empty or missing)")
    if used and not (resume or overwrite):
        raise SkillosError(f"{out}: output folder exists and is not empty; --resume to continue "
                           "it, --overwrite to replace it, or choose another --out")
    return used


def creatable(out: Path) -> None:
    """A one-line error now, before the gates, when `out` cannot be made (under /proc or /sys, a
    read-only or full disk, a file on its path): probed by making it, then removing what the probe
    made, so nothing is left behind."""
    made, probe = [], Path(out).absolute()
    while not probe.exists():
        made.append(probe)
        probe = probe.parent
    try:
        for folder in reversed(made):
            folder.mkdir()
    except OSError as exc:
        raise SkillosError(f"{out}: cannot create the output folder ({exc.strerror or exc})") from None
    finally:
        for folder in made:
            try:
                folder.rmdir()
            except OSError:
                pass


def config_text(cfg) -> str:
    """The config as a run folder records it (CONFIG): what `same_config` compares against."""
    import yaml

    return yaml.safe_dump(cfg.to_dict(), sort_keys=False)


def read_config(out: Path) -> dict:
    """The config a run in `out` recorded (its CONFIG, as written); a one-line error if unreadable."""
    path = Path(out) / CONFIG
    return safety.load_yaml(safety.read_text(path, safety.MAX_CONFIG_BYTES, CONFIG), str(path))


def recorded_config(out: Path) -> dict:
    """The config a run in `out` recorded, or {} when it wrote none (a folder made by hand)."""
    return (read_config(out) or {}) if (Path(out) / CONFIG).exists() else {}


def held_out_rows(out: Path) -> list[dict]:
    """The held-out game rows a run in `out` recorded (what its exports read); a folder without
    any is a one-line error."""
    out = Path(out)
    if not (out / GAMES).is_file():
        raise SkillosError(f"{out}: no {GAMES}; RUN must be a run folder (skillos eval / quickstart --out)")
    rows = [r for r in read_rows(out, "eval") if r.get("phase", "eval") == "eval"]
    if not rows:
        raise SkillosError(f"{out / GAMES}: no held-out games recorded")
    return rows


def outcomes_by_arm(rows: list[dict]) -> dict:
    """arm -> {game id: outcome}: its success, None where the game was unmeasured (never a loss),
    or, for a game played several times (eval.trials), its trials (stats.compare_units reads
    both)."""
    games: dict = {}
    for r in rows:
        games.setdefault(r["arm"], {})[r["game_id"]] = (
            r["trials"] if r.get("trials") is not None else None if r.get("unmeasured") else r.get("success"))
    return games


def control_arm(out: Path, arms: list) -> str | None:
    """The control of a run in `out` among its `arms`: the config's eval.control, else no_memory."""
    declared = (recorded_config(out).get("eval") or {}).get("control")
    control = declared.get("arm") if isinstance(declared, dict) else declared
    return control if control in arms else ("no_memory" if "no_memory" in arms else None)


def two_arms(out: Path, arms: list, treatment: str | None, control: str | None) -> tuple[str, str]:
    """(treatment, control) of an export of two arms: the control defaults to the run's, the
    treatment to the one other arm; a name that is not an arm is a one-line error."""
    control = control if control is not None else control_arm(out, arms)
    others = [a for a in arms if a != control]
    if treatment is None and len(others) == 1:
        treatment = others[0]
    for flag, arm in (("--control", control), ("--arm", treatment)):
        if arm not in arms:
            raise SkillosError(f"{out}: {flag} {arm!r} is not an arm of this run ({', '.join(arms)}); "
                               "name the skill arm with --arm and the control with --control")
    if treatment == control:
        raise SkillosError(f"--arm and --control are both {control!r}; an export compares two arms")
    return treatment, control


def same_config(out: Path, cfg) -> bool:
    """Whether the run in `out` was made with this config (its config.yaml, as written) up to how
    and where it runs (config.identity: workers, compute.backend local or ray, ...): what a resume
    must check before it continues another run's rows."""
    import yaml

    try:
        recorded = read_config(out)
    except SkillosError:
        return False
    return isinstance(recorded, dict) and identity(recorded) == identity(yaml.safe_load(config_text(cfg)))


def read_rows(out: Path, phase: str) -> list[dict]:
    """The rows of one phase ("eval" or "train") a run in `out` wrote. JSONL rows (old rows read
    too, and rows holding a game's trials: eval.trials); a last line cut off by a kill is dropped
    (its game is played again), any other damaged line is a one-line error
    (records.read_game_rows)."""
    return read_game_rows(Path(out) / ROW_FILES[phase], trials=True)


def finished_report(out: Path) -> dict | None:
    """The report of a run in `out` that finished: report.json (written after every arm's ledger
    record) whose arms' attempted games are all in games.jsonl; else None (the resume plays what
    is missing). A damaged report.json is a one-line error."""
    if not (out / REPORT).exists():
        return None
    report = safety.read_json_file(out / REPORT, "eval report")
    if not isinstance(report.get("arms"), dict) or not isinstance(report.get("comparisons"), list):
        raise SkillosError(f"{out / REPORT}: damaged eval report (no arms or comparisons); move it away "
                           "to resume the run, or choose another --out")
    rows = read_rows(out, "eval")
    for arm, summary in report["arms"].items():
        played = {r["game_id"] for r in rows if r.get("arm") == arm and r.get("phase", "eval") == "eval"}
        if not isinstance(summary, dict) or summary.get("attempted") != len(played):
            return None  # rows lost since the report: not finished, the resume plays them again
    return report
