"""`skillos import`: per-game results written by other tools become ledger runs, so `compare`
and `--family` re-test them with the same statistics as skillos's own runs.

Two inputs:
* JSONL, one object a line, read through a column mapping (`Mapping`): a game id, a success
  value, and the arm, either a column of each row ("long": one row per game and arm), one success
  column per arm ("wide": `arms: {column: arm}`), or, with neither, the file's name (one file
  per arm, e.g. `eval_arms/no_memory.jsonl`);
* inspect_ai `.eval` / `.json` logs, read with inspect_ai's own reader: a sample is a game (its
  `metadata.game_id`, else its id), its arm `metadata.arm`, else the log's model; success is the
  score of the named scorer (the only one when there is one);
* Anthropic skill-creator's `benchmark.json` (a `.json` whose runs name their configuration,
  evals/skill_creator.py): each configuration an arm, a run (or, with `unit: expectation`, each
  expectation) one unit paired by eval and run number, a run with errors unmeasured.

Success values are read strictly: true/false, 1/0, C/I (inspect's CORRECT/INCORRECT), won/lost,
success/failure, pass/fail; null or a missing field is unmeasured (a game attempted with no
outcome), never a failure; anything else is a one-line error naming the file and line. A game
listed twice for one arm is an error, never a choice. Games one arm has and another lacks are
not guessed: each run keeps exactly the games its file lists, and `compare` counts and prints the
games it could not pair.

Each arm becomes one run of the experiment named on the command line, with its games written in
skillos's row format under $SKILLOS_HOME/imports/<hash>/ (the ledger keeps each file's sha256),
its config marking it imported with the source files and their hashes, and one executor
fingerprint per import (`imported:<hash>`): the arms of one import were measured together.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from skillos.errors import SkillosError
from skillos.evals import stats
from skillos.evals.skill_creator import UNITS, benchmark_games, is_benchmark
from skillos.evals.skillsbench import looks_like_registry, registry_games
from skillos.evals.units import Arms, Trials, label, trial_label, unit_outcome
from skillos.files import file_sha256
from skillos.secrets import safe_name
from skillos import safety
from skillos.config.experiment import EXPERIMENT_NAME
from skillos.evals.records import GameRow
from skillos.repo.store import write_atomic

# An import's stated bounds, checked before (bytes) and while (arms, rows) reading, before any
# ledger write: each pair of arms is a comparison, so arms grow the work and the ledger as arms^2.
MAX_IMPORT_BYTES = 512 << 20  # one result file
MAX_IMPORT_ARMS = 64  # 2,016 pairs
MAX_IMPORT_ROWS = 2_000_000  # (arm, game) outcomes over every file

_TRUE = {"true", "1", "1.0", "c", "correct", "won", "win", "success", "succeeded", "pass", "passed", "yes"}
_FALSE = {"false", "0", "0.0", "i", "incorrect", "lost", "loss", "failure", "failed", "fail", "no"}


@dataclass
class Mapping:
    """Which field of a JSONL row holds what (a mapping file has the same keys)."""

    game: str = "game_id"
    success: str = "success"
    arm: str | None = "arm"  # the arm's column; a file with no such column is one arm (its name)
    arms: dict = field(default_factory=dict)  # wide rows: {success column: arm name}
    scorer: str | None = None  # inspect logs: the scorer whose value is success
    unit: str = "pass_rate"  # skill-creator benchmark.json: what one trial of an eval scores (its UNITS)
    trial: str | None = None  # JSONL: the trial's column; rows of one game and arm are its trials

    @classmethod
    def load(cls, path: str | Path | None, **flags) -> "Mapping":
        """The mapping file (YAML or JSON with these keys), then the flags that are set."""
        data: dict = {}
        if path is not None:
            text = safety.read_text(Path(path), safety.MAX_CONFIG_BYTES, "mapping file")
            data = safety.load_yaml(text, str(path)) or {}
            if not isinstance(data, dict):
                raise SkillosError(f"{path}: a mapping file is a YAML mapping of {', '.join(cls.__dataclass_fields__)}")
            unknown = sorted(set(data) - set(cls.__dataclass_fields__))
            if unknown:
                raise SkillosError(f"{path}: unknown mapping key {unknown[0]!r}; keys: {', '.join(cls.__dataclass_fields__)}")
        data.update({k: v for k, v in flags.items() if v is not None})
        mapping = cls(**data)
        if not isinstance(mapping.arms, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                         for k, v in mapping.arms.items()):
            raise SkillosError("mapping 'arms': a mapping of success column -> arm name")
        if mapping.unit not in UNITS:
            raise SkillosError(f"--unit {mapping.unit!r}: one of {', '.join(UNITS)}")
        return mapping


def success_value(value, where: str) -> bool | float | None:
    """A success field read strictly (see the module docstring); a number strictly between 0 and
    1 is a score (partial credit), kept as it is; None: unmeasured."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, float) and 0 < value < 1:
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        if word in ("", "null", "none", "n/a", "na"):
            return None
    raise SkillosError(f"{where}: success value {value!r} is not a success, a failure or a score "
                       "(true/false, 1/0, C/I, won/lost, pass/fail, a number in [0, 1]; null for unmeasured)")


def _jsonl_games(path: Path, mapping: Mapping) -> dict:
    """arm -> {game id: success} of one JSONL file."""
    skips = safety.Skips()
    games: dict = {}
    for number, _, row in safety.jsonl_records(path, "result file", skips, objects_only=False):
        where = f"{path} line {number}"
        if not isinstance(row, dict):
            raise SkillosError(f"{where}: not a JSON object")
        if mapping.game not in row or row[mapping.game] in (None, ""):
            raise SkillosError(f"{where}: no game id (column {mapping.game!r}; map another with --game-col)")
        game = label(row[mapping.game], "game id", where)
        if mapping.arms:
            cells = {arm: row.get(column) for column, arm in mapping.arms.items()}
        else:
            arm = label(row[mapping.arm], "arm", where) if mapping.arm and row.get(mapping.arm) not in (None, "") \
                else path.stem
            if mapping.success not in row:
                raise SkillosError(f"{where}: no success field (column {mapping.success!r}; map another with "
                                   "--success-col; null means unmeasured)")
            cells = {arm: row[mapping.success]}
        trial = None
        if mapping.trial:
            if row.get(mapping.trial) in (None, ""):
                raise SkillosError(f"{where}: no trial (column {mapping.trial!r}); every row of a file read "
                                   "with --trial-col names its trial")
            trial = trial_label(row[mapping.trial], where)
        for arm, value in cells.items():
            outcomes = games.setdefault(arm, {})
            if trial is None:
                if game in outcomes:
                    raise SkillosError(f"{where}: game {game!r} appears twice for arm {safe_name(arm)!r} (several "
                                       "trials of one game: name their column with --trial-col)")
                outcomes[game] = success_value(value, where)
                continue
            trials = outcomes.setdefault(game, Trials())
            if trial in trials:
                raise SkillosError(f"{where}: trial {trial!r} of game {game!r} appears twice for arm {safe_name(arm)!r}")
            trials[trial] = success_value(value, where)
        if number % 1000 == 0 or len(games) > MAX_IMPORT_ARMS:
            _bounded(games, where)  # stop early, not after a 10,000-column file was read whole
    if skips:
        raise SkillosError(f"{path}: damaged ({skips.places[0]})")
    return games


def _reader(path: Path):
    """How a file is read: JSONL rows, a skill-creator benchmark.json, or an inspect_ai log."""
    if path.suffix == ".eval":
        return _inspect_games
    if path.suffix != ".json":
        return _jsonl_games
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return _inspect_games  # inspect_ai's reader says what is wrong with it
    if is_benchmark(data):
        return lambda p, mapping: benchmark_games(p, data, mapping.unit)
    if looks_like_registry(data):
        return lambda p, mapping: registry_games(p, data)
    return _inspect_games


def _inspect_games(path: Path, mapping: Mapping) -> dict:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise SkillosError("importing an inspect_ai log needs inspect_ai: pip install 'skillos[inspect]'") from None
    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # inspect_ai's reader raises many types for a file that is not a log
        raise SkillosError(f"{path}: not an inspect_ai eval log ({type(exc).__name__}: {str(exc)[:200]})") from None
    games: dict = {}
    for sample in log.samples or []:
        where = f"{path} sample {sample.id!r} epoch {sample.epoch}"
        meta = sample.metadata or {}
        arm = label(meta.get("arm") or log.eval.model, "arm", where)
        game = label(meta.get("game_id") or sample.id, "game id", where)
        scores = sample.scores or {}
        if mapping.scorer:
            score = scores.get(mapping.scorer)
        elif len(scores) > 1:
            raise SkillosError(f"{where}: scored by {', '.join(sorted(scores))}; choose one with --scorer")
        else:
            score = next(iter(scores.values()), None)
        trials = games.setdefault(arm, {}).setdefault(game, Trials())
        if str(sample.epoch) in trials:
            raise SkillosError(f"{where}: game {game!r} appears twice for arm {safe_name(arm)!r}")
        trials[str(sample.epoch)] = None if score is None else success_value(score.value, where)
    # one epoch per sample: its outcome as it is; several: the epochs are trials of one unit
    return {arm: {g: (t if len(t) > 1 else next(iter(t.values()))) for g, t in units.items()}
            for arm, units in games.items()}


def read_results(paths, mapping: Mapping) -> dict:
    """arm -> {game id: success} over every file; an arm's game in two files is an error. A
    reader that knows more of an arm (a registry's configuration and condition) leaves it in
    the result's `meta`."""
    merged = Arms()
    paths = list(map(Path, paths))
    for path in paths:  # every file's size before any is read
        if not path.is_file():
            kind = ("a folder" if path.is_dir() else "a FIFO" if path.is_fifo() else "not a regular file") \
                if path.exists() else "no such file"
            raise SkillosError(f"{path}: {kind}" + (", not a result file" if path.exists() else ""))
        if path.stat().st_size > MAX_IMPORT_BYTES:
            raise SkillosError(f"{path}: {path.stat().st_size / 2**20:,.0f} MiB, above the {MAX_IMPORT_BYTES >> 20} "
                               "MiB one result file may hold; split it")
    for path in paths:
        read = _reader(path)(path, mapping)
        merged.meta.update({safe_name(arm): m for arm, m in getattr(read, "meta", {}).items()})
        for arm, why in getattr(read, "reasons", {}).items():
            merged.reasons.setdefault(safe_name(arm), {}).update(why)
        for arm, outcomes in read.items():
            label(arm, "arm", str(path))  # every reader's names, the file name's and a mapping's included
            for game in outcomes:
                label(game, "game id", f"{path} arm {safe_name(arm)!r}")
            known = merged.setdefault(safe_name(arm), {})  # a key-shaped arm name: a stable stand-in
            twice = sorted(set(known) & set(outcomes))
            if twice:
                raise SkillosError(f"{path}: game {twice[0]!r} of arm {safe_name(arm)!r} is also in an earlier file")
            known.update(outcomes)
        _bounded(merged, path)
    if not merged:
        raise SkillosError("no games in the given files")
    return merged


def _bounded(games: dict, where) -> None:
    """An import's arms and rows within MAX_IMPORT_ARMS and MAX_IMPORT_ROWS (a one-line error)."""
    if len(games) > MAX_IMPORT_ARMS:
        raise SkillosError(f"{where}: more than {MAX_IMPORT_ARMS} arms ({len(games)} so far; every pair is a "
                           "comparison); import fewer arms, or map the arm column with --arm-col")
    rows = sum(len(outcomes) for outcomes in games.values())
    if rows > MAX_IMPORT_ROWS:
        raise SkillosError(f"{where}: more than {MAX_IMPORT_ROWS:,} game outcomes ({rows:,} so far); split the import")


def import_summary(outcomes: dict) -> dict:
    """An imported arm's denominators: units attempted, measured (a unit is measured when one of
    its trials is), unmeasured; successes for binary single-trial units, else None with the mean
    score over measured units and the trials counted (measured or not)."""
    units = [unit_outcome(v) for v in outcomes.values()]
    scored = any(trials is not None for _, trials in units)
    values = [success if trials is None else trials for success, trials in units]
    means = [m for m in map(stats.unit_mean, values) if m is not None]
    summary = {"attempted": len(units), "measured": len(means), "unmeasured": len(units) - len(means),
               "successes": None if scored else int(sum(means)), "coerced_actions": 0, "actions": 0}
    if scored:
        summary.update(stats.score_summary(values))
    return summary


def import_results(ledger, paths, experiment: str, mapping: Mapping, home: Path, env: str | None = None) -> dict:
    """Record every arm of `paths` as a finished run of experiment `experiment` (created, or the
    newest of that name); returns {experiment_id, source, runs: [{run_id, arm, denominators}]}."""

    if not EXPERIMENT_NAME.fullmatch(experiment or ""):
        raise SkillosError(f"--experiment {experiment!r}: letters, digits, '.', '_' and '-' (a name to compare by)")
    results = read_results(paths, mapping)
    sources = {str(Path(p).resolve()): file_sha256(Path(p)) for p in paths}
    stamp = hashlib.sha256(json.dumps(sorted(sources.items())).encode()).hexdigest()[:12]
    folder = Path(home) / "imports" / stamp
    files = {}
    for arm, outcomes in sorted(results.items()):  # the rows' files first: re-written the same by a rerun
        rows = []
        for g, value in sorted(outcomes.items()):
            success, trials = unit_outcome(value)
            row = GameRow(arm=arm, game_id=g, success=success, trials=trials)
            row.unmeasured_reason = (results.reasons.get(arm, {}).get(g) or "the source recorded no outcome"
                                     if row.unmeasured else None)
            rows.append(row.to_dict())
        path = folder / f"{hashlib.sha256(arm.encode()).hexdigest()[:8]}.jsonl"
        text = "".join(json.dumps(r) + "\n" for r in rows)
        write_atomic(path, text)
        files[arm] = (path, hashlib.sha256(text.encode()).hexdigest())
    runs = []
    with ledger.writing():  # every arm's run, or none: a killed import leaves no half of itself
        exp = ledger.find_or_add_experiment(experiment, f"imported:{stamp}",
                                            hypothesis="imported per-game results, re-tested by skillos",
                                            success_metric="success rate per arm (paired, exact McNemar)")
        for arm, outcomes in sorted(results.items()):
            config = {"imported": {"sources": sources, "mapping": asdict(mapping), **results.meta.get(arm, {})},
                      "env": {"name": env}, "arm": arm}
            run_id = ledger.start_run(exp, arm, config=config, executor_fingerprint=f"imported:{stamp}")
            summary = import_summary(outcomes)
            path, digest = files[arm]
            ledger.add_eval(run_id, arm, summary, str(path.resolve()), digest)
            ledger.end_run(run_id, "finished", f"imported from {len(sources)} file(s), {stamp}")
            runs.append({"run_id": run_id, "arm": arm, "denominators": summary, **results.meta.get(arm, {})})
        ledger.correct("experiments", exp, "status", f"imported {len(runs)} arm(s), {stamp}", value="measured")
    return {"experiment_id": exp, "experiment": experiment, "import": stamp, "sources": sources, "runs": runs}
