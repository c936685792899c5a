"""What the viewer shows, as JSON documents read from the ledger (read-only) and run folders.

Every page is one document named by a key ("experiments", "experiment/3", "run/q1",
"game/q1/closed_loop/eval/valid_unseen-0002", "repo/q1/closed_loop", "failures"); the server
answers /api/doc?key=KEY and `--export` writes every document to disk. Nothing here writes.

A document never fails as a whole because of one bad record: a JSONL line cut off by a kill, a
ledger row that does not parse, a missing folder become entries of the document's `problems`
list, which every page shows at its top.

Only files under the run folders it was given are read: a run folder is one found under RUNS
(or named by the ledger and lying under RUNS), every file read must resolve inside its run
folder (a symlink out of it is a problem, not a read), names taken from a key (an arm) are
plain names, and every read is the FIFO-safe, size-capped one of skillos.safety.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from urllib.parse import quote, unquote

from skillos import safety
from skillos.errors import SkillosError
from skillos.view import plots
from skillos.evals.run_folder import (GAMES, HISTORY, REPO_PREFIX, REPORT, ROW_FILES, RUN_MARKERS, SWEEP, TRACES,
                                      arm_of_repo, repo_dir)
from skillos.config.derived import training_output_dir
from skillos.ledger import Ledger
from skillos.ledger.store import canary_passed


def make_key(*parts) -> str:
    return "/".join(quote(str(p), safe="") for p in parts)


def split_key(key: str) -> list[str]:
    return [unquote(p) for p in key.split("/")]


def inside(folder: Path, path: Path) -> bool:
    """Whether `path`, with every symlink resolved, lies inside `folder` (resolved)."""
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except (ValueError, OSError, RuntimeError):
        return False


def plain_name(name: str) -> bool:
    """A name taken from a URL that may become one path component: no separator, no NUL, not . or .."""
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\\0")


def read_jsonl(path: Path, problems: list, folder: Path | None = None) -> list[dict]:
    """Rows of a JSONL file, read bounded; a line that does not parse, is too long or too deep is
    a problem (named with its line and whether it is a partial last line), never a crash and
    never silently dropped. A file outside `folder` (through a symlink) is not read."""
    if folder is not None and not inside(folder, path):
        problems.append(f"{path.name}: points outside the run folder; not read")
        return []
    skips = safety.Skips(keep=50)
    try:
        rows = [row for _, _, row in safety.jsonl_records(path, path.name, skips)]
    except SkillosError as exc:
        problems.append(str(exc))
        return []
    for place in skips.places:
        where, _, reason = place.rpartition(": ")
        problems.append(f"{where}: {safety.SKIP_WORDS.get(reason, reason)}")
    if skips.total() > len(skips.places):
        problems.append(f"{path.name}: {skips.total() - len(skips.places)} more lines skipped ({skips.summary()})")
    return rows


def read_json(path: Path, problems: list, folder: Path | None = None):
    if not path.exists() and not path.is_symlink():
        return None
    if folder is not None and not inside(folder, path):
        problems.append(f"{path.name}: points outside the run folder; not read")
        return None
    try:
        return safety.read_json_file(path, path.name, expect=None)
    except SkillosError as exc:
        problems.append(f"{path.name}: does not parse ({exc})")
        return None


class Source:
    """The ledger at HOME/ledger.db and the run folders under RUNS (plus every folder a ledger
    run names as its output)."""

    def __init__(self, home: Path | None = None, runs: Path | None = None):
        self.home = Path(home or os.environ.get("SKILLOS_HOME") or ".skillos")
        self.runs = Path(runs or "runs")
        self.ledger_path = self.home / "ledger.db"
        self._folders: tuple[float, dict] | None = None
        # report.json (path, mtime, size) -> its plots: the index is polled every 2 s, and judging
        # an old report's verdicts again costs ~0.1 s (statsmodels' correction)
        self._report_plots: dict = {}

    # -- plumbing -------------------------------------------------------------------------
    def _ledger(self, problems: list):
        try:
            return Ledger.read_only(self.ledger_path)
        except SkillosError as exc:
            problems.append(f"ledger: {exc}")
            return None

    def _guard(self, problems: list, what: str, read, default=None):
        """One record's read: a corrupt row becomes a problem, not a failed page."""
        try:
            return read()
        except (sqlite3.Error, ValueError, TypeError, KeyError, AttributeError, SkillosError) as exc:
            problems.append(f"{what}: {type(exc).__name__}: {exc}")
            return default

    def run_folders(self) -> dict:
        """run id -> folder: folders under RUNS with run files, and outputs the ledger names that
        lie under RUNS. A folder reached through a symlink that leads out of RUNS is left out."""
        found = {}
        if self.runs.is_dir():  # up to three levels down: never a walk through checkpoint trees
            for depth in ("", "*/", "*/*/", "*/*/*/"):
                for marker in RUN_MARKERS + (TRAINING_MARKER,):
                    for path in sorted(self.runs.glob(depth + marker)):
                        folder = path.parent if marker != TRAINING_MARKER else _training_root(path)
                        if not inside(self.runs, folder):
                            continue
                        rid = folder.relative_to(self.runs).as_posix()
                        found.setdefault(folder.resolve(), self.runs.resolve().name if rid == "." else rid)
        problems: list = []
        ledger = self._ledger([]) if self.ledger_path.exists() else None
        if ledger is not None:
            for row in self._guard(problems, "runs", lambda: ledger.rows("runs"), []):
                output = self._guard(problems, "run config", lambda: _output(row))  # shown by its page
                if not isinstance(output, str) or not output or "\0" in output:
                    continue
                if Path(output).is_dir() and inside(self.runs, Path(output)) and Path(output).resolve() not in found:
                    found[Path(output).resolve()] = Path(output).name or "run"
            ledger.close()
        by_id, taken = {}, set()
        for folder, rid in found.items():
            base = rid if rid not in taken else f"{rid}-{len(taken)}"
            taken.add(base)
            by_id[base] = folder
        return by_id

    def _rid_of(self, output: str | None, folders: dict) -> str | None:
        if not output:
            return None
        target = Path(output).resolve()
        return next((rid for rid, f in folders.items() if f == target), None)

    # -- documents --------------------------------------------------------------------------
    def doc(self, key: str) -> dict:
        parts = split_key(key)
        kind, args = parts[0], parts[1:]
        readers = {"experiments": (self.experiments, 0), "experiment": (self.experiment, 1),
                   "run": (self.run, 1), "game": (self.game, 4), "repo": (self.repo, 2),
                   "failures": (self.failures, 0)}
        if kind not in readers or len(args) != readers[kind][1]:
            return {"kind": "missing", "key": key, "problems": [f"no page {key!r}"]}
        data = readers[kind][0](*args)
        data.setdefault("problems", [])
        data["key"] = key
        return data

    def keys(self):
        """Every document's key: what --export writes."""
        yield "experiments"
        yield "failures"
        index = self.experiments()
        for exp in index["experiments"]:
            yield make_key("experiment", exp["id"])
        for folder in index["runs"]:
            run = self.run(folder["id"])
            yield make_key("run", folder["id"])
            for row in run["rows"]:
                yield make_key("game", folder["id"], row.get("arm"), row.get("phase"), row.get("game_id"))
            for arm in run["learning_arms"]:
                yield make_key("repo", folder["id"], arm)

    def experiments(self) -> dict:
        problems: list = []
        data = {"kind": "experiments", "ledger": str(self.ledger_path), "goal": None,
                "experiments": [], "runs": [], "problems": problems}
        ledger = self._ledger(problems)
        folders = self.run_folders()
        if ledger is not None:
            data["goal"] = self._guard(problems, "goal", ledger.goal)
            runs = self._guard(problems, "runs", lambda: ledger.rows("runs"), [])
            evals = self._guard(problems, "evals", lambda: ledger.rows("evals"), [])
            for row in self._guard(problems, "experiments", lambda: ledger.rows("experiments"), []):
                exp = self._guard(problems, f"experiment #{row.get('id')}",
                                  lambda: ledger.corrected("experiments", row))
                if exp is None:
                    continue
                exp["n_runs"] = sum(r.get("experiment_id") == exp["id"] for r in runs)
                exp["headline"] = self._guard(problems, f"experiment #{exp['id']} headline",
                                              lambda: self._headline(exp["id"], runs, evals, folders))
                data["experiments"].append(exp)
            ledger.close()
        for rid, folder in folders.items():
            data["runs"].append(_folder_summary(rid, folder))
        return data

    def _headline(self, exp_id, runs: list, evals: list, folders: dict) -> dict:
        """The index's line for one experiment: arms, rates with denominators, verdict words."""
        mine = [r for r in runs if r.get("experiment_id") == exp_id]
        reports, seen = [], set()
        for run in mine:
            rid = self._rid_of(self._guard([], "output", lambda: _output(run)), folders)
            if rid and rid not in seen:
                seen.add(rid)
                try:
                    st = (folders[rid] / REPORT).stat()
                except OSError:
                    continue
                key = (str(folders[rid] / REPORT), st.st_mtime_ns, st.st_size)
                if key not in self._report_plots:
                    if len(self._report_plots) > 1000:
                        self._report_plots.clear()
                    report, _ = self.folder_plots(rid, folders[rid], [], training=False)  # its page shows the problems
                    self._report_plots[key] = report and report["plots"]
                if self._report_plots[key]:
                    reports.append(self._report_plots[key])
        ids = {r.get("id") for r in mine}
        return plots.headline(reports, [e for e in evals if e.get("run_id") in ids])

    def experiment(self, exp_id: str) -> dict:
        problems: list = []
        data = {"kind": "experiment", "id": exp_id, "problems": problems, "runs": [], "reports": [],
                "training": [], "gate_results": [], "overrides": [], "candidates": [], "failures": [],
                "canaries": []}
        ledger = self._ledger(problems)
        if ledger is None:
            return data
        try:
            exp_id = int(exp_id)
            row = ledger.db.execute("SELECT * FROM experiments WHERE id = ?", (exp_id,)).fetchone()
            if row is None:
                problems.append(f"no experiment with id {exp_id} in {self.ledger_path}")
                return data
            data["experiment"] = ledger.corrected("experiments", dict(row))
            folders = self.run_folders()
            outputs = []
            for r in ledger.db.execute("SELECT id FROM runs WHERE experiment_id = ? ORDER BY id", (exp_id,)):
                run = self._guard(problems, f"run #{r['id']}", lambda: ledger.run(r["id"]))
                if run is None:
                    continue
                run["config"] = self._guard(problems, f"run #{run['id']} config_json",
                                            lambda: json.loads(run["config_json"] or "{}"))
                output = self._guard(problems, f"run #{run['id']} output", lambda: _output_of(run["config"], run.get("arm")))
                run["rid"] = self._rid_of(output, folders)
                if output and run["rid"] is None:
                    problems.append(
                        f"run #{run['id']}: its output folder {output} is outside the run folders read here "
                        f"({self.runs}): pass --runs {Path(output).parent}" if Path(output).is_dir() else
                        f"run #{run['id']}: its output folder {output} is missing")
                for ev in run["evals"]:
                    for col in ("n_attempted", "n_measured", "n_unmeasured", "successes", "coerced_actions"):
                        if ev[col] is not None and not isinstance(ev[col], int):
                            problems.append(f"eval #{ev['id']} of run #{run['id']}: {col} is {ev[col]!r}, "
                                            "not a count")
                data["runs"].append(run)
                if run["rid"] and run["rid"] not in outputs:
                    outputs.append(run["rid"])
            run_ids = [r["id"] for r in data["runs"]]
            for rid in outputs:
                report, training = self.folder_plots(rid, folders[rid], problems)
                if report:
                    data["reports"].append(report)
                if training:
                    data["training"].append(training)
            data["gate_results"] = [g for g in ledger.rows("gate_results")
                                    if g["experiment_id"] == exp_id or g["run_id"] in run_ids]
            data["overrides"] = [o for o in ledger.rows("overrides") if o["experiment_id"] == exp_id]
            data["candidates"] = [self._guard(problems, f"candidate #{c.get('id')}",
                                              lambda: ledger.corrected("candidates", c), c)
                                  for c in ledger.rows("candidates") if c["run_id"] in run_ids]
            data["canaries"] = [self._guard(problems, f"canary #{c['id']}", lambda: _canary_view(c), {})
                                for c in self._guard(problems, "canaries", lambda: ledger.canaries(), []) or []
                                if c["run_id"] in run_ids]
            data["failures"] = self._guard(problems, "failures", lambda: [
                f for f in ledger.failures() if f["experiment_id"] == exp_id or f["run_id"] in run_ids], [])
            from skillos.ledger.postmortem import postmortem

            data["postmortem"] = self._guard(problems, "postmortem", lambda: postmortem(ledger, exp_id))
        except (sqlite3.Error, ValueError) as exc:
            problems.append(f"experiment {exp_id}: {type(exc).__name__}: {exc}")
        finally:
            ledger.close()
        return data

    def folder_plots(self, rid: str, folder: Path, problems: list, training: bool = True) -> tuple:
        """A run folder's report (its comparisons with their verdicts, the per-arm rates, the
        forest, and a sweep's curve) and its training curves: (report, training), each None when
        the folder has no such file."""
        report, curves = None, None
        raw = read_json(folder / REPORT, problems, folder)
        if isinstance(raw, dict) and isinstance(raw.get("comparisons"), list):
            drawn = self._guard(problems, f"{rid}: {REPORT} plots", lambda: plots.report_plots(raw, rid)) or {}
            report = {"rid": rid, "comparisons": drawn.pop("comparisons", raw["comparisons"]),
                      "family_correction": raw.get("family_correction"), "control": raw.get("control"),
                      "arms": raw.get("arms", {}), "plots": drawn, "sweep": None}
            if (folder / SWEEP).exists():
                sweep = read_json(folder / SWEEP, problems, folder)
                report["sweep"] = self._guard(problems, f"{rid}: sweep plot", lambda: plots.sweep_plot(sweep, raw))
        states = plots.trainer_states(folder) if training else []
        if states:
            state = read_json(states[0], problems, folder)
            curves = self._guard(problems, f"{rid}: training log", lambda: plots.training_plot(
                state, states[0].relative_to(folder).as_posix()))
            if curves is not None:
                curves["rid"] = rid
        return report, curves

    def _folder(self, rid: str, problems: list) -> Path | None:
        folder = self.run_folders().get(rid)
        if folder is None:
            problems.append(f"no run folder {rid!r} under {self.runs}")
        return folder

    def run(self, rid: str) -> dict:
        problems: list = []
        data = {"kind": "run", "id": rid, "problems": problems, "rows": [], "arms": [],
                "learning_arms": [], "traced": [], "report": None, "sweep": None, "history": [],
                "ledger_runs": []}
        folder = self._folder(rid, problems)
        if folder is None:
            return data
        data["path"] = str(folder)
        for phase, name in ROW_FILES.items():
            if (folder / name).exists():
                for row in read_jsonl(folder / name, problems, folder):
                    row.setdefault("phase", phase)
                    data["rows"].append(row)
        data["arms"] = sorted({str(r.get("arm")) for r in data["rows"]})
        data["learning_arms"] = sorted(a for a in ({str(r.get("arm")) for r in data["rows"] if r.get("phase") == "train"}
                                                   | {arm_of_repo(p) for p in folder.glob(REPO_PREFIX + "*") if p.is_dir()})
                                       if plain_name(a))
        if (folder / TRACES).exists():
            data["traced"] = sorted({make_key(t.get("arm"), t.get("phase"), t.get("game_id"))
                                     for t in read_jsonl(folder / TRACES, problems, folder)})
        data["report"] = read_json(folder / REPORT, problems, folder)
        data["sweep"] = read_json(folder / SWEEP, problems, folder)
        found: list = []  # the same files read again for the plots: each problem shown once
        report, data["training"] = self.folder_plots(rid, folder, found)
        problems += [p for p in found if p not in problems]
        data["plots"] = report and {**report["plots"], "sweep": report["sweep"]}
        if report and isinstance(data["report"], dict):
            data["report"]["comparisons"] = report["comparisons"]  # each with its verdict
        if (folder / HISTORY).exists():
            data["history"] = read_jsonl(folder / HISTORY, problems, folder)
        ledger = self._ledger([]) if self.ledger_path.exists() else None
        if ledger is not None:
            for row in self._guard(problems, "ledger runs", lambda: ledger.rows("runs"), []):
                output = self._guard(problems, f"run #{row['id']} config_json", lambda: _output(row))
                if output and Path(output).resolve() == folder.resolve():
                    data["ledger_runs"].append({k: row[k] for k in ("id", "experiment_id", "status",
                                                                    "executor_fingerprint", "started_at",
                                                                    "ended_at")})
            ledger.close()
        return data

    def game(self, rid: str, arm: str, phase: str, game_id: str) -> dict:
        problems: list = []
        data = {"kind": "game", "run": rid, "arm": arm, "phase": phase, "game_id": game_id,
                "row": None, "trace": None, "problems": problems}
        folder = self._folder(rid, problems)
        if folder is None:
            return data
        name = ROW_FILES.get(phase, GAMES)
        for row in read_jsonl(folder / name, problems, folder) if (folder / name).exists() else []:
            if row.get("arm") == arm and row.get("game_id") == game_id:
                data["row"] = row
        if (folder / TRACES).exists():
            for trace in read_jsonl(folder / TRACES, problems, folder):
                if ((trace.get("arm"), trace.get("phase"), trace.get("game_id")) == (arm, phase, game_id)
                        and trace.get("trial") in (None, 0)):  # of a game's trials, the first: the one curated on
                    data["trace"] = trace  # the last one: a resumed game was played again
        if data["trace"] is None:
            problems.append(f"no trajectory for {arm} {phase} {game_id} in {TRACES} (a run made before "
                            "skillos recorded trajectories, or the game is still being played)")
        if data["row"] is None and data["trace"] is None:
            problems.append(f"no game {game_id} of arm {arm} ({phase}) in run {rid}")
        return data

    def repo(self, rid: str, arm: str) -> dict:
        """A learning arm's repo as it evolved: the curator's operations after each game (replayed
        in the page into snapshots and diffs), and the repo on disk now."""
        problems: list = []
        data = {"kind": "repo", "run": rid, "arm": arm, "events": [], "final": {}, "problems": problems}
        folder = self._folder(rid, problems)
        if folder is None:
            return data
        if not plain_name(arm):
            problems.append(f"{arm!r} is not an arm name")
            return data
        if (folder / TRACES).exists():
            last = {}
            for trace in read_jsonl(folder / TRACES, problems, folder):
                if trace.get("arm") == arm and trace.get("trial") in (None, 0):  # the trial curated on
                    last[(trace.get("phase"), trace.get("game_id"))] = trace
            order = {"train": 0, "eval": 1}
            for (phase, game_id), trace in sorted(last.items(), key=lambda kv: (order.get(kv[0][0], 2), kv[0][1])):
                data["events"].append({"phase": phase, "game_id": game_id, "task": trace.get("task"),
                                       "success": trace.get("success"), "ops": trace.get("curation", [])})
        else:
            problems.append(f"no {TRACES} in this run: only the repo as it is now is shown")
        repo = repo_dir(folder, arm)
        if repo.is_dir() and inside(folder, repo):
            for path in sorted(repo.glob("*/SKILL.md")):
                if not inside(folder, path):
                    problems.append(f"{path.parent.name}/SKILL.md: points outside the run folder; not read")
                    continue
                try:
                    data["final"][path.parent.name] = safety.read_text(path, safety.MAX_SKILL_BYTES, "SKILL.md")
                except SkillosError as exc:
                    problems.append(str(exc))
        return data

    def failures(self) -> dict:
        problems: list = []
        data = {"kind": "failures", "failures": [], "stats": None, "fixes": [], "postmortem": None,
                "problems": problems}
        ledger = self._ledger(problems)
        if ledger is None:
            return data
        try:
            for row in self._guard(problems, "failures", lambda: ledger.rows("failures"), []):
                failure = self._guard(problems, f"failure #{row.get('id')}", lambda: ledger.failure(row["id"]))
                if failure is not None:
                    data["failures"].append(failure)
            from skillos.ledger.postmortem import postmortem
            from skillos.ledger.stats import failure_stats

            data["stats"] = self._guard(problems, "failure stats", lambda: failure_stats(data["failures"]))
            for row in self._guard(problems, "fixes", lambda: ledger.rows("fixes"), []):
                fix = self._guard(problems, f"fix #{row.get('id')}", lambda: ledger.fix(row["id"]))
                if fix is not None:
                    data["fixes"].append(fix)
            data["postmortem"] = self._guard(problems, "postmortem", lambda: postmortem(ledger))
        finally:
            ledger.close()
        return data


def _canary_view(row: dict) -> dict:
    """A canary's ledger row as the viewer shows it: its verdicts, rule, seeds, controls and split,
    from the result it recorded (`passed` by the ledger's own rule, never the row's word)."""
    result = json.loads(row["result_json"])
    keep = ("trainer", "metric", "n", "before", "after", "b", "c", "p", "p_corrected", "verdict", "control",
            "controls", "seeds", "rule", "held_out", "quick", "code_hash", "wall_s", "resolution")
    return {"id": row["id"], "run_id": row["run_id"], "created_at": row["created_at"],
            "passed": canary_passed(result), **{k: result.get(k) for k in keep}}


def _output(run_row: dict) -> str | None:
    return _output_of(json.loads(run_row.get("config_json") or "{}"), run_row.get("arm"))


def _output_of(config, arm) -> str | None:
    """The folder a ledger run wrote: an eval's `output`, a training run's (arm "train")
    training.output_dir. Every config carries a training section; only a training run wrote there."""
    if not isinstance(config, dict):
        return None
    if arm != "train" or "output" in config or not isinstance(config.get("training"), dict):
        return config.get("output")
    from types import SimpleNamespace

    experiment = config.get("experiment") if isinstance(config.get("experiment"), dict) else {}
    return str(training_output_dir(SimpleNamespace(training=SimpleNamespace(output_dir=config["training"].get("output_dir")),
                                                   experiment=SimpleNamespace(name=experiment.get("name")))))


# a training output folder: a saved checkpoint's trainer state (its archive/ belongs to it)
TRAINING_MARKER = f"checkpoint-*/{plots.TRAINER_STATE}"


def _training_root(state: Path) -> Path:
    folder = state.parent.parent
    return folder.parent if folder.name == "archive" else folder


def _folder_summary(rid: str, folder: Path) -> dict:
    kind = ("sweep" if (folder / SWEEP).exists() else
            "optimize" if (folder / HISTORY).exists() else
            "training" if not (folder / GAMES).exists() and plots.trainer_states(folder) else "eval")
    try:
        modified = max(p.stat().st_mtime for p in folder.iterdir())
    except (OSError, ValueError):
        modified = None
    return {"id": rid, "path": str(folder), "kind": kind, "modified": modified}
