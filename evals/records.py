"""The records an eval writes and reads, typed: the per-game row (one JSONL line), the summary of
an arm, and the eval report. Each has `to_dict` / `from_dict`; every JSONL row carries a
`schema_version`, and `from_dict` still reads the rows written before there was one (version 0).

The dicts stay the wire format (report.json, games.jsonl, the ledger, `--json`); these classes
say what is in them, in one place, instead of keys indexed across modules.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field

from skillos.evals.stats import trials_of, unit_mean
from skillos import safety
from skillos.errors import SkillosError

SCHEMA_VERSION = 1  # of a games.jsonl / curation.jsonl row
# A row holding a unit's trials is version 2: a skillos that knows only version 1 would read its
# `success: null` as unmeasured, so it refuses the row (check_schema) instead of misreading it.
TRIALS_SCHEMA_VERSION = 2
READABLE_SCHEMA_VERSION = TRIALS_SCHEMA_VERSION


def check_schema(data: dict, where: str, current: int = SCHEMA_VERSION) -> None:
    """A record written by a newer skillos (a schema_version above `current`, or not a number) is
    refused in one line: read as this version, its new fields would be silently wrong."""
    version = data.get("schema_version", 0)
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise SkillosError(f"{where}: schema_version {version!r} is not a version number; the record is damaged")
    if version > current:
        raise SkillosError(f"{where}: schema_version {version} is newer than this skillos reads ({current}); "
                           "upgrade skillos to read it")


def read_game_rows(path, what: str = "per-game rows", trials: bool = False) -> list[dict]:
    """The rows of a games.jsonl / curation.jsonl a run wrote, trusted only if whole: a last line
    cut off by a kill is dropped (its game is played again); any other damaged line (not JSON, too
    long or deep, not a row, a newer schema, fields of the wrong type) is a one-line error naming
    the file and line, never a row read wrong."""
    from pathlib import Path

    path = Path(path)
    if not path.exists():
        return []
    rows, skips = [], safety.Skips()
    for number, _, data in safety.jsonl_records(path, what, skips):
        where = f"{path} line {number}"
        # rows holding a unit's trials are read only where they are compared by unit (`trials`:
        # a ledger run's recorded file); a run folder's readers count `success` per game
        check_schema(data, where, READABLE_SCHEMA_VERSION if trials else SCHEMA_VERSION)
        for key, kinds in (("arm", (str,)), ("game_id", (str,)), ("success", (bool, type(None))),
                           ("steps", (int,)), ("coerced_actions", (int,))):
            if key in data and not isinstance(data[key], kinds) or (key in ("arm", "game_id", "success") and key not in data):
                raise SkillosError(f"{where}: damaged row ({key} is {data.get(key)!r}); move the line away or "
                                   "rerun without --resume")
        trials = data.get("trials")
        if trials is not None and not (isinstance(trials, list) and trials and all(
                t is None or (isinstance(t, (int, float)) and not isinstance(t, bool) and 0 <= t <= 1) for t in trials)):
            raise SkillosError(f"{where}: damaged row (trials is {str(trials)[:80]}, not a list of scores in [0, 1] "
                               "or null); move the line away or rerun without --resume")
        rows.append(GameRow.from_dict(data).to_dict())
    damaged = {k: n for k, n in skips.counts.items() if k not in ("partial-last-line", "repaired-utf8")}
    if damaged:
        first = next(p for p in skips.places if not p.endswith(("partial-last-line", "repaired-utf8")))
        raise SkillosError(f"{path}: damaged ({first}); move the line away or rerun without --resume")
    return rows


def _known(cls, data: dict) -> dict:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in data.items() if k in names}


@dataclass
class GameRow:
    """One game an arm played: success True/False, or None (unmeasured, with the reason)."""

    arm: str
    game_id: str
    success: bool | None
    phase: str = "eval"  # a version-0 row without a phase is a held-out game
    task_type: str = ""
    task: str = ""
    steps: int = 0
    coerced_actions: int = 0
    skills_retrieved: list = field(default_factory=list)
    repo_size: int = 0
    unmeasured: bool | None = None  # derived from success when a version-0 row lacks it
    unmeasured_reason: str | None = None
    # what the curator did after the game (zeros for an arm that does not curate): a failed call
    # or a refused operation is counted, never invisible
    curator_calls: int = 0
    curator_failed_calls: int = 0
    curator_applied_ops: int = 0
    curator_refused_ops: int = 0
    grading_timeouts: int = 0  # answers graded wrong because grading passed its time bound
    unread_answers: int = 0  # replies graded wrong because no final answer could be read from them
    # A unit of several trials or a score in [0, 1] (an imported benchmark's task): each trial's
    # score, None for an unmeasured trial; `success` is then None and the unit is unmeasured only
    # when none of its trials was measured. None: one binary outcome, in `success`.
    trials: list | None = None
    schema_version: int = SCHEMA_VERSION
    extra: dict = field(default_factory=dict)  # keys this version does not know: kept, not dropped

    def __post_init__(self):
        if self.unmeasured is None:
            self.unmeasured = (self.success is None if self.trials is None
                               else all(t is None for t in self.trials))
        if self.trials is not None:
            self.schema_version = max(self.schema_version, TRIALS_SCHEMA_VERSION)

    def to_dict(self) -> dict:
        data = asdict(self)
        return {**data.pop("extra"), **data}

    @classmethod
    def from_dict(cls, data: dict) -> "GameRow":
        known = _known(cls, data)
        known.pop("extra", None)
        extra = {k: v for k, v in data.items() if k not in known}
        return cls(**{"schema_version": 0, **known}, extra=extra)


@dataclass
class ArmSummary:
    """An arm's denominators: attempted, measured, unmeasured (with reasons), successes."""

    attempted: int
    measured: int
    unmeasured: int
    unmeasured_reasons: list
    successes: int | None  # None where games hold several trials (eval.trials): `mean_score` instead
    success_rate: float | None  # None when nothing was measured, never 0; with trials, the mean score
    actions: int
    coerced_actions: int
    coercion_rate: float | None
    final_repo_size: int
    by_task_type: dict
    curator_calls: int = 0
    curator_failed_calls: int = 0
    curator_failure_rate: float | None = None  # None when the arm made no curator call
    curator_applied_ops: int = 0
    curator_refused_ops: int = 0
    grading_timeouts: int = 0  # games graded wrong because grading passed its time bound
    unread_answers: int = 0  # answers (every trial's) graded wrong because no final answer could be read
    # with several trials a game: the mean over measured games of each game's mean, every trial
    # played and the trials unmeasured (stats.score_summary); absent for one trial a game
    mean_score: float | None = None
    trials: int | None = None
    trials_unmeasured: int | None = None

    def to_dict(self) -> dict:
        data = asdict(self)
        if self.trials is None:  # one trial a game: the report reads as it always has
            for key in ("mean_score", "trials", "trials_unmeasured"):
                data.pop(key)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "ArmSummary":
        return cls(**_known(cls, data))


@dataclass
class EvalReport:
    """What `skillos.evaluate` reports: the run's settings, each arm's summary, and every
    comparison against the control with its verdict (from `stats.verdicts`) and family."""

    experiment: str
    hypothesis: str
    config_hash: str
    output_dir: str
    env: dict
    retrieval: dict
    control: str
    arms: dict  # arm -> ArmSummary
    comparisons: list  # Comparison dicts, each with its "verdict"
    family_correction: str
    family: dict = field(default_factory=dict)  # name and size: what the adjusted p counted
    train_curation: dict = field(default_factory=dict)  # arm -> the curator's counts on train games
    ledger: dict | None = None  # where it was recorded
    sweep: dict | None = None  # skillos.sweep's summary

    def to_dict(self) -> dict:
        data = asdict(self)
        data["arms"] = {arm: s.to_dict() if isinstance(s, ArmSummary) else s for arm, s in self.arms.items()}
        return {k: v for k, v in data.items() if v is not None or k not in ("ledger", "sweep")}

    @classmethod
    def from_dict(cls, data: dict) -> "EvalReport":
        values = _known(cls, data)
        values["arms"] = {arm: ArmSummary.from_dict(s) for arm, s in data["arms"].items()}
        return cls(**values)


def row_outcome(row: dict):
    """What a row gives the statistics (stats.compare_units): its trials when it holds several or
    a score, else its one binary outcome (None: unmeasured)."""
    return row["trials"] if row.get("trials") is not None else row.get("success")


def row_trials(row: dict) -> list:
    """A row's plays, each a score in [0, 1] or None (unmeasured): its trials (eval.trials), or its
    one outcome, None where the row is marked unmeasured."""
    if row.get("trials") is not None:
        return trials_of(row["trials"])
    return [None if row.get("unmeasured") else trials_of(row.get("success"))[0]]


def row_mean(row: dict) -> float | None:
    """A row's mean over its measured trials (its 0/1 outcome for one binary trial); None: unmeasured."""
    return unit_mean(row_outcome(row))
