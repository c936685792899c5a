"""The ledger: one SQLite file ($SKILLOS_HOME/ledger.db, default .skillos/ledger.db), WAL mode,
schema versioned with migrations.

Append-only in spirit: no row is ever deleted. A correction is a new row in `corrections` that
points at what it corrects (invalidate, retract, supersede, a status or a conclusion), and the
current state of a record is its row plus its corrections, so history stays auditable. The only
in-place writes complete a record's lifecycle (a run's end).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import socket
import sqlite3
import subprocess
from pathlib import Path

from skillos.errors import SkillosError
from skillos.ledger import taxonomy
from skillos.secrets import redact, redact_text, safe_name

APPLICATION_ID = 0x534B4C47  # "SKLG": marks the file as a skillos ledger
TABLES = ("goals", "experiments", "arms", "runs", "evals", "checkpoints", "failures",
          "failure_modes", "fixes", "gate_results", "overrides", "corrections", "candidates", "seals",
          "canaries", "approvals")
CORRECTABLE = ("experiments", "runs", "evals", "failures", "fixes", "candidates")

MIGRATIONS = {
    1: """
    CREATE TABLE goals (id INTEGER PRIMARY KEY, text TEXT NOT NULL, set_by TEXT NOT NULL,
        created_at TEXT NOT NULL);
    CREATE TABLE experiments (id INTEGER PRIMARY KEY, name TEXT NOT NULL, hypothesis TEXT,
        success_metric TEXT, config_hash TEXT, status TEXT NOT NULL DEFAULT 'planned',
        created_at TEXT NOT NULL);
    CREATE TABLE arms (id INTEGER PRIMARY KEY, experiment_id INTEGER NOT NULL REFERENCES experiments,
        name TEXT NOT NULL, UNIQUE (experiment_id, name));
    CREATE TABLE runs (id INTEGER PRIMARY KEY, experiment_id INTEGER REFERENCES experiments,
        arm_id INTEGER REFERENCES arms, config_json TEXT, seed INTEGER, git_commit TEXT,
        git_dirty INTEGER, executor_fingerprint TEXT, host TEXT, started_at TEXT NOT NULL,
        ended_at TEXT, status TEXT NOT NULL DEFAULT 'running', detail TEXT);
    CREATE TABLE evals (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs,
        arm TEXT, n_attempted INTEGER, n_measured INTEGER, n_unmeasured INTEGER,
        successes INTEGER, coerced_actions INTEGER, actions INTEGER, jsonl_path TEXT,
        jsonl_sha256 TEXT, created_at TEXT NOT NULL);
    CREATE TABLE checkpoints (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs,
        path TEXT NOT NULL, step INTEGER, sha256 TEXT, created_at TEXT NOT NULL);
    CREATE TABLE failures (id INTEGER PRIMARY KEY, what TEXT NOT NULL, category TEXT NOT NULL,
        kind TEXT NOT NULL, cost_gpu_hours REAL, cost_wall_hours REAL, detected_by TEXT,
        gate TEXT, experiment_id INTEGER REFERENCES experiments, run_id INTEGER REFERENCES runs,
        status TEXT NOT NULL DEFAULT 'open', token TEXT UNIQUE, created_at TEXT NOT NULL);
    CREATE TABLE failure_modes (failure_id INTEGER NOT NULL REFERENCES failures, mode TEXT NOT NULL,
        PRIMARY KEY (failure_id, mode));
    CREATE TABLE fixes (id INTEGER PRIMARY KEY, failure_id INTEGER NOT NULL REFERENCES failures,
        description TEXT NOT NULL, metric TEXT NOT NULL, direction TEXT NOT NULL,
        expected_size REAL, before_run_id INTEGER REFERENCES runs, after_run_id INTEGER,
        verdict TEXT, detail TEXT, created_at TEXT NOT NULL);
    CREATE TABLE gate_results (id INTEGER PRIMARY KEY, experiment_id INTEGER, run_id INTEGER,
        gate INTEGER, check_name TEXT, status TEXT, config_key TEXT, seen TEXT, expected TEXT,
        created_at TEXT NOT NULL);
    CREATE TABLE overrides (id INTEGER PRIMARY KEY, experiment_id INTEGER, gate INTEGER,
        check_name TEXT, reason TEXT NOT NULL, actor TEXT NOT NULL, created_at TEXT NOT NULL);
    CREATE TABLE corrections (id INTEGER PRIMARY KEY, table_name TEXT NOT NULL,
        row_id INTEGER NOT NULL, kind TEXT NOT NULL, value TEXT, reason TEXT, actor TEXT,
        created_at TEXT NOT NULL);
    CREATE INDEX corrections_target ON corrections (table_name, row_id);
    """,
    # skillos optimize: every candidate a run tried, its edits and diff, and the gate's verdict.
    2: """
    CREATE TABLE candidates (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs,
        epoch INTEGER, step INTEGER, edits TEXT, diff TEXT, verdict TEXT NOT NULL, mode TEXT,
        incumbent_rate REAL, candidate_rate REAL, mean_difference REAL, se REAL, threshold REAL,
        ci_low REAL, ci_high REAL, n_tasks INTEGER, n_paired INTEGER, n_unmeasured INTEGER,
        created_at TEXT NOT NULL);
    """,
    # sealed test splits: one read per (experiment name, split content hash), whatever the
    # process or output folder; a further read only with a person's recorded override.
    3: """
    CREATE TABLE seals (id INTEGER PRIMARY KEY, experiment TEXT NOT NULL, split_hash TEXT NOT NULL,
        reason TEXT, output TEXT, actor TEXT, override TEXT, created_at TEXT NOT NULL);
    CREATE INDEX seals_key ON seals (experiment, split_hash);
    """,
    # learning canaries (skillos canary): a trainer's own code on a learnable miniature, before
    # and after, beside a negative control; a GPU launch needs a passing one for its code_hash.
    4: """
    CREATE TABLE canaries (id INTEGER PRIMARY KEY, run_id INTEGER REFERENCES runs, trainer TEXT NOT NULL,
        code_hash TEXT NOT NULL, metric TEXT, n INTEGER, before_rate REAL, after_rate REAL,
        b INTEGER, c INTEGER, p REAL, verdict TEXT, control_b INTEGER, control_c INTEGER,
        control_p REAL, control_verdict TEXT, passed INTEGER NOT NULL, quick INTEGER NOT NULL,
        result_json TEXT NOT NULL, created_at TEXT NOT NULL);
    CREATE INDEX canaries_key ON canaries (trainer, code_hash);
    """,
    # approved plans (`skillos plan` / `skillos approve`): a launch that spends GPUs needs one for
    # its config hash; who approved and when, and the plan they read.
    5: """
    CREATE TABLE approvals (id INTEGER PRIMARY KEY, config_hash TEXT NOT NULL, plan_sha256 TEXT NOT NULL,
        plan_json TEXT NOT NULL, actor TEXT NOT NULL, created_at TEXT NOT NULL);
    CREATE INDEX approvals_key ON approvals (config_hash);
    """,
    # a person's step records its witness (toolkit/person.py): the real user, the terminal, the
    # process ancestry, agent variables and agent ancestors: a forged terminal is visible here.
    6: """
    ALTER TABLE approvals ADD COLUMN witness_json TEXT;
    ALTER TABLE goals ADD COLUMN witness_json TEXT
    """,
    # gate 7's watches (ledger/watchdog.py): each watchdog's life, which outlives its job by
    # compute.watch_after_minutes; and the process that wrote each run, so a run still [running]
    # whose writer is gone is a job that died without its final row.
    7: """
    CREATE TABLE watches (id INTEGER PRIMARY KEY, watcher_pid INTEGER NOT NULL, host TEXT NOT NULL,
        job_pids TEXT, paths TEXT, gpus INTEGER, after_minutes REAL, log TEXT, started_at TEXT NOT NULL,
        last_look_at TEXT, job_ended_at TEXT, ended_at TEXT, alarms INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL DEFAULT 'watching', detail TEXT);
    ALTER TABLE runs ADD COLUMN pid INTEGER;
    ALTER TABLE runs ADD COLUMN tokens_json TEXT
    """,
}
SCHEMA_VERSION = max(MIGRATIONS)

# The failures table with their corrections applied, as `corrected` applies them: the newest
# status correction sets the status, the newest invalidate/retract/supersede/restore decides
# `valid` (1 or 0). Counts, filters and pages run on it in SQL instead of on one dict per failure.
CURRENT_FAILURES = """WITH latest AS (
        SELECT row_id, max(CASE WHEN kind = 'status' THEN id END) AS status_id,
            max(CASE WHEN kind IN ('invalidate', 'retract', 'supersede', 'restore') THEN id END) AS validity_id
        FROM corrections WHERE table_name = 'failures' GROUP BY row_id),
    current_failures AS (
        SELECT f.id, f.what, f.category, f.kind, f.cost_gpu_hours, f.cost_wall_hours, f.detected_by,
            f.gate, f.experiment_id, f.run_id, f.created_at,
            CASE WHEN s.id IS NULL THEN f.status ELSE s.value END AS status,
            v.id IS NULL OR v.kind = 'restore' AS valid
        FROM failures f LEFT JOIN latest l ON l.row_id = f.id
            LEFT JOIN corrections s ON s.id = l.status_id LEFT JOIN corrections v ON v.id = l.validity_id)
"""


class LedgerError(SkillosError):
    """The ledger file is unusable or an operation on it is invalid."""


CONTROL_VERDICTS = ("not detected", "not detected (below the MDE)", "can't tell yet", "regression")  # measured, no gain


def canary_passed(result) -> bool:
    """A canary passed when its trained runs' pooled verdict is an improvement, every seed's run
    moved up (`seeds`), every stratum is an improvement of its own (`strata`, where the right answer
    differs by input), the trained runs beat the best constant answer (`versus_constant`, where
    the result holds a payoff table), and every negative control (`control`, and each of `controls`) was
    measured and shows none (a control that could not be judged proves nothing), as the run
    recorded them."""
    if not isinstance(result, dict):
        return False
    more = result.get("controls") or {}
    controls = [result.get("control")] + (list(more.values()) if isinstance(more, dict) else [None])
    seeds = result.get("seeds")  # every training seed's run moved up (training/canary RULE)
    strata = result.get("strata") or []  # each an improvement, where the right answer differs by input
    # where the miniature has a payoff table, the trained runs beat its best constant answer
    constant = result.get("versus_constant") if result.get("payoff") is not None else {"improvement": True}
    return (result.get("verdict") == "improvement"
            and isinstance(constant, dict) and constant.get("improvement") is True
            and all(isinstance(c, dict) and c.get("verdict") in CONTROL_VERDICTS for c in controls)
            and isinstance(seeds, list) and bool(seeds)
            and all(isinstance(x, dict) and x.get("direction") == "up" for x in seeds)
            and isinstance(strata, list) and all(isinstance(x, dict) and x.get("improvement") is True for x in strata))


def _sealed_games(result) -> str | None:
    """The content digest of the sealed held-out games a recorded canary's result was judged on
    (None: it was judged on the tuning split, recorded before canaries had a sealed split, or
    damaged)."""
    held = result.get("held_out") if isinstance(result, dict) else None
    games = held.get("games") if isinstance(held, dict) and held.get("split") == "sealed" else None
    return games if isinstance(games, str) and games else None


def pid_alive(pid) -> bool:
    """Whether process `pid` runs on this host (a zombie has ended: its exit is only not yet
    collected)."""
    try:
        state = Path(f"/proc/{int(pid)}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (OSError, ValueError, IndexError):
        try:
            os.kill(int(pid), 0)
            return True
        except (OSError, ValueError, OverflowError):
            return False


def _parsed(result_json):
    try:
        return json.loads(result_json)
    except (TypeError, ValueError):
        return None


def _survives_looks(result: dict, looks: int) -> bool:
    """The pooled p, Bonferroni-corrected over `looks`, below the alpha the canary was judged at."""
    p, alpha = result.get("p"), result.get("alpha")
    return (isinstance(p, (int, float)) and isinstance(alpha, (int, float)) and looks >= 1
            and p * looks < alpha)


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


SKILLOS = "skillos"  # the actor of what skillos writes itself (the default conclusion)


def actor() -> str:
    """Who is acting: $SKILLOS_ACTOR, else the login name (recorded with overrides and seals)."""
    import getpass

    return os.environ.get("SKILLOS_ACTOR") or getpass.getuser()


def default_path() -> Path:
    return Path(os.environ.get("SKILLOS_HOME") or ".skillos") / "ledger.db"


def git_version(cwd: str | Path = ".") -> tuple[str | None, bool | None]:
    """(commit, dirty) of the working directory's repo, or (None, None) outside git."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                                text=True, timeout=10)
        if commit.returncode != 0:
            return None, None
        # tracked files only: run outputs (checkpoints, runs/) must not mark every later run dirty
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd, capture_output=True,
                                text=True, timeout=10)
        return commit.stdout.strip(), bool(status.stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        return None, None


class Ledger:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_path()
        if self.path.exists() and self.path.is_dir():
            raise LedgerError(f"{self.path}: is a folder; the ledger must be a file")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LedgerError(f"{self.path.parent}: cannot create the ledger folder ({exc.strerror}); "
                              "set SKILLOS_HOME to a writable folder") from None
        try:
            self.db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            self.db.row_factory = sqlite3.Row
            self.db.execute("PRAGMA busy_timeout = 60000")
            self._check_and_migrate()
            self.db.execute("PRAGMA foreign_keys = ON")
            self.db.execute("PRAGMA synchronous = FULL")  # a committed row survives a kill
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"{self.path}: not a usable skillos ledger ({exc}); move it away "
                              "or point SKILLOS_HOME elsewhere") from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- schema ---------------------------------------------------------------------------
    def _check_and_migrate(self) -> None:
        app_id = self.db.execute("PRAGMA application_id").fetchone()[0]
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if app_id not in (0, APPLICATION_ID):
            raise LedgerError(f"{self.path}: a SQLite file of another application "
                              f"(application_id {app_id:#x}), not a skillos ledger")
        if version > SCHEMA_VERSION:
            raise LedgerError(f"{self.path}: ledger schema {version} is newer than this skillos "
                              f"({SCHEMA_VERSION}); upgrade skillos")
        if app_id == APPLICATION_ID and version == SCHEMA_VERSION:
            return
        self.db.execute("BEGIN IMMEDIATE")  # one process migrates; the others wait, then re-check
        try:
            app_id = self.db.execute("PRAGMA application_id").fetchone()[0]
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if app_id == 0:
                tables = self.db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
                if tables:
                    raise LedgerError(f"{self.path}: a SQLite file with {tables} tables of its "
                                      "own, not a skillos ledger")
            for step in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[step].split(";"):
                    if statement.strip():
                        self.db.execute(statement)
                self.db.execute(f"PRAGMA user_version = {step}")
            self.db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("PRAGMA journal_mode = WAL")

    # -- low level ------------------------------------------------------------------------
    def _insert(self, table: str, stamp: str = "created_at", **values) -> int:
        values = {k: redact_text(v) if isinstance(v, str) else v for k, v in values.items()}
        values.setdefault(stamp, now())
        cols = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        cur = self.db.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", list(values.values()))
        return cur.lastrowid

    def row(self, table: str, row_id: int) -> dict:
        """One row of `table` as stored (no corrections applied); a LedgerError if there is none."""
        row = self.db.execute(f"SELECT * FROM {table} WHERE id = ?", (row_id,)).fetchone()
        if row is None:
            raise LedgerError(f"no {table[:-1]} with id {row_id}")
        return dict(row)

    def _corrections(self, table: str, row_id: int) -> list[dict]:
        rows = self.db.execute("SELECT * FROM corrections WHERE table_name = ? AND row_id = ? "
                               "ORDER BY id", (table, row_id)).fetchall()
        return [dict(r) for r in rows]

    def correct(self, table: str, row_id: int, kind: str, reason: str, value: str | None = None,
                actor: str = "agent") -> int:
        """Append a correction (invalidate, restore, retract, supersede, status, conclusion)."""
        if table not in CORRECTABLE:
            raise LedgerError(f"cannot correct {table!r}; correctable: {', '.join(CORRECTABLE)}")
        self.row(table, row_id)
        if kind in ("invalidate", "retract", "supersede") and not (reason or "").strip():
            raise LedgerError(f"{kind} needs a reason")
        return self._insert("corrections", table_name=table, row_id=row_id, kind=kind,
                            value=redact_text(value), reason=redact_text(reason), actor=actor)

    def corrected(self, table: str, row: dict, corrections: list[dict] | None = None) -> dict:
        """A row with its corrections applied: valid flag + reason, status, conclusion
        (`corrections`: the row's own, when the caller read them in one batch)."""
        row = dict(row, valid=True, invalid_reason=None, conclusion=None, conclusions=[], corrections=[])
        concluded = []  # (written by skillos?, text): skillos's own is the conclusion, others stand beside it
        for c in self._corrections(table, row["id"]) if corrections is None else corrections:
            row["corrections"].append({k: c[k] for k in ("id", "kind", "value", "reason", "actor",
                                                          "created_at")})
            if c["kind"] in ("invalidate", "retract", "supersede"):
                row["valid"], row["invalid_reason"] = False, f"{c['kind']}: {c['reason']}"
            elif c["kind"] == "restore":
                row["valid"], row["invalid_reason"] = True, None
            elif c["kind"] == "status":
                row["status"] = c["value"]
            elif c["kind"] == "conclusion":
                concluded.append(c)
        if concluded:
            own = [c for c in concluded if c["actor"] == SKILLOS]
            row["conclusion"] = (own or concluded)[-1]["value"]
            row["conclusions"] = [{"text": c["value"], "by": c["actor"], "at": c["created_at"]} for c in concluded]
        return row

    # -- goal -----------------------------------------------------------------------------
    def set_goal(self, text: str, person: str, witness: dict | None = None) -> int:
        """A new goal, set by `person` (who confirmed it at a terminal: `skillos ledger goal`);
        `witness`: what the step saw of where it ran (toolkit/person.py)."""
        if not (person or "").strip() or person in ("agent", SKILLOS):
            raise LedgerError("the project goal is set by a person at an interactive terminal, not by an agent")
        if not (text or "").strip():
            raise LedgerError("a goal needs its text")
        return self._insert("goals", text=redact_text(text), set_by=person,
                            witness_json=json.dumps(witness, sort_keys=True) if witness is not None else None)

    def goal(self) -> dict | None:
        row = self.db.execute("SELECT * FROM goals ORDER BY id DESC LIMIT 1").fetchone()
        return dict(row) if row else None

    def goals(self) -> list[dict]:
        """Every goal ever set, oldest first, with who set it and when (the newest is the goal)."""
        return [dict(r) for r in self.db.execute("SELECT * FROM goals ORDER BY id")]

    # -- approved plans ------------------------------------------------------------------------
    def add_approval(self, plan_hash: str, plan_sha256: str, plan: dict, person: str,
                     witness: dict | None = None) -> int:
        """A person approved a plan (`skillos approve`): the plan hash it covers (stored in column
        config_hash), what they read, and `witness`: what the step saw of where it ran."""
        if not (person or "").strip() or person in ("agent", SKILLOS):
            raise LedgerError("a plan is approved by a person at an interactive terminal, not by an agent")
        return self._insert("approvals", config_hash=plan_hash, plan_sha256=plan_sha256,
                            plan_json=json.dumps(plan, sort_keys=True), actor=person,
                            witness_json=json.dumps(witness, sort_keys=True) if witness is not None else None)

    def approvals(self) -> list[dict]:
        """Every approval, oldest first, with its witness parsed (None where none was recorded)."""
        try:
            rows = self.db.execute("SELECT * FROM approvals ORDER BY id").fetchall()
        except sqlite3.OperationalError:  # a read-only ledger from before approvals
            return []
        out = []
        for row in map(dict, rows):
            try:
                row["witness"] = json.loads(row.get("witness_json") or "null")
            except ValueError:
                row["witness"] = None
            out.append(row)
        return out

    def approval(self, plan_hash: str) -> dict | None:
        """The newest approval of a plan for this plan hash (None: none recorded)."""
        try:
            row = self.db.execute("SELECT * FROM approvals WHERE config_hash = ? ORDER BY id DESC LIMIT 1",
                                  (plan_hash,)).fetchone()
        except sqlite3.OperationalError:  # a read-only ledger from before approvals: none recorded
            return None
        return dict(row) if row else None

    # -- experiments, arms, runs, evals, checkpoints ---------------------------------------
    def add_experiment(self, name: str, hypothesis: str = "", success_metric: str = "",
                       config_hash: str | None = None) -> int:
        return self._insert("experiments", name=name, hypothesis=redact_text(hypothesis),
                            success_metric=redact_text(success_metric), config_hash=config_hash)

    def find_or_add_experiment(self, name: str, config_hash: str, **fields) -> int:
        """The experiment of this name and config. One registered by hand before its first run
        (`ledger experiments add`: no config yet) is that experiment: the run attaches to it
        and fills in its config hash, instead of a duplicate under the same name."""
        row = self.db.execute("SELECT id FROM experiments WHERE name = ? AND config_hash = ? "
                              "ORDER BY id DESC LIMIT 1", (name, config_hash)).fetchone()
        if row:
            return row["id"]
        planned = self.db.execute(
            "SELECT e.id FROM experiments e WHERE e.name = ? AND e.config_hash IS NULL AND NOT EXISTS "
            "(SELECT 1 FROM runs r WHERE r.experiment_id = e.id) ORDER BY e.id DESC LIMIT 1", (name,)).fetchone()
        if planned:
            self.db.execute("UPDATE experiments SET config_hash = ? WHERE id = ? AND config_hash IS NULL",
                            (config_hash, planned["id"]))
            return planned["id"]
        return self.add_experiment(name, config_hash=config_hash, **fields)

    def resolve_experiment(self, ref) -> int:
        """An experiment id from an id or a name (the newest experiment of that name)."""
        text = str(ref).strip()
        if text.lstrip("#").isdigit():
            return self.row("experiments", int(text.lstrip("#")))["id"]
        row = self.db.execute("SELECT id FROM experiments WHERE name = ? ORDER BY id DESC LIMIT 1",
                              (text,)).fetchone()
        if row is None:
            raise LedgerError(f"no experiment named {text!r} (ledger experiments list shows them)")
        return row["id"]

    def experiment(self, exp_id: int) -> dict:
        exp = self.corrected("experiments", self.row("experiments", exp_id))
        exp["runs"] = [self.run(r["id"]) for r in self.db.execute(
            "SELECT id FROM runs WHERE experiment_id = ? ORDER BY id", (exp_id,))]
        return exp

    def experiments(self, include_invalid: bool = True) -> list[dict]:
        rows = [self.corrected("experiments", dict(r))
                for r in self.db.execute("SELECT * FROM experiments ORDER BY id")]
        return rows if include_invalid else [r for r in rows if r["valid"]]

    EVIDENCE_STATUSES = ("measured", "finished", "concluded")

    def evidence(self) -> list[dict]:
        """Experiments that gates and reports may treat as evidence: valid ones that measured
        something (not planned, running, crashed or interrupted)."""
        return [e for e in self.experiments(include_invalid=False) if e["status"] in self.EVIDENCE_STATUSES]

    def arm_id(self, experiment_id: int, name: str) -> int:
        name = safe_name(name)  # a key-shaped arm name is never stored in clear
        self.db.execute("INSERT OR IGNORE INTO arms (experiment_id, name) VALUES (?, ?)",
                        (experiment_id, name))
        return self.db.execute("SELECT id FROM arms WHERE experiment_id = ? AND name = ?",
                               (experiment_id, name)).fetchone()["id"]

    def start_run(self, experiment_id: int | None, arm: str | None = None, config: dict | None = None,
                  seed: int | None = None, executor_fingerprint: str | None = None) -> int:
        """A run starts: its config snapshot (secrets redacted), seed, code version and host."""
        commit, dirty = git_version()
        return self._insert(
            "runs", stamp="started_at", experiment_id=experiment_id,
            arm_id=self.arm_id(experiment_id, arm) if experiment_id and arm else None,
            config_json=json.dumps(redact(config or {}), sort_keys=True), seed=seed,
            git_commit=commit, git_dirty=None if dirty is None else int(dirty),
            executor_fingerprint=redact_text(executor_fingerprint), host=socket.gethostname(), pid=os.getpid())

    def end_run(self, run_id: int, status: str = "finished", detail: str | None = None,
                tokens: dict | None = None) -> None:
        """Complete a run's record (the one in-place write: a lifecycle, not a correction);
        `tokens`: what its paid API calls measured (evals/experiment.api_cost)."""
        self.db.execute("UPDATE runs SET ended_at = ?, status = ?, detail = ?, tokens_json = ? WHERE id = ? "
                        "AND ended_at IS NULL", (now(), status, redact_text(detail),
                                                 None if tokens is None else json.dumps(tokens, sort_keys=True), run_id))

    def end_experiment_run(self, run_id: int, status: str, detail: str | None = None,
                           experiment_status: str | None = None) -> None:
        """End a run that is its experiment's whole launch (train, optimize) and give the
        experiment the same outcome, so a finished one is not left `planned`."""
        self.end_run(run_id, status, detail)
        experiment = self.row("runs", run_id)["experiment_id"]
        if experiment is not None:
            self.correct("experiments", experiment, "status", f"run #{run_id} {status}",
                         value=experiment_status or status)

    def run(self, run_id: int) -> dict:
        run = self.corrected("runs", self.row("runs", run_id))
        arm = self.db.execute("SELECT name FROM arms WHERE id = ?", (run["arm_id"],)).fetchone()
        run["arm"] = arm["name"] if arm else None
        run["evals"] = [self.corrected("evals", dict(r)) for r in self.db.execute(
            "SELECT * FROM evals WHERE run_id = ? ORDER BY id", (run_id,))]
        return run

    def add_eval(self, run_id: int, arm: str, summary: dict, jsonl_path: str | None,
                 jsonl_sha256: str | None) -> int:
        return self._insert("evals", run_id=run_id, arm=arm, n_attempted=summary["attempted"],
                            n_measured=summary["measured"], n_unmeasured=summary["unmeasured"],
                            successes=summary["successes"], coerced_actions=summary["coerced_actions"],
                            actions=summary["actions"], jsonl_path=jsonl_path, jsonl_sha256=jsonl_sha256)

    def add_checkpoint(self, run_id: int, path: str, step: int | None = None,
                       sha256: str | None = None) -> int:
        return self._insert("checkpoints", run_id=run_id, path=path, step=step, sha256=sha256)

    def add_candidate(self, run_id: int, **fields) -> int:
        """One candidate of a skillos optimize run (columns of the candidates table)."""
        return self._insert("candidates", run_id=run_id, **fields)

    def sealed(self, experiment: str, hashes) -> set:
        """Which of these content hashes were already read as a sealed test of `experiment`."""
        hashes = list(hashes)
        found = set()
        for i in range(0, len(hashes), 500):
            chunk = hashes[i:i + 500]
            rows = self.db.execute(f"SELECT split_hash FROM seals WHERE experiment = ? AND split_hash IN "
                                   f"({','.join('?' * len(chunk))})", (experiment, *chunk)).fetchall()
            found |= {r[0] for r in rows}
        return found

    def seal_reads(self, experiment: str, split_hash: str) -> list[dict]:
        """The recorded reads of a sealed split (experiment name, content hash), oldest first."""
        return [dict(r) for r in self.db.execute("SELECT * FROM seals WHERE experiment = ? AND split_hash = ? "
                                                 "ORDER BY id", (experiment, split_hash))]

    def read_sealed(self, experiment: str, split_hash: str, reason: str, output: str, actor: str,
                    override: str | None = None, command: str = "optimize", record_override: bool = True) -> int:
        """Record one read of a sealed split. A second read of the same split (same experiment
        name, same content hash) is refused, from any process or output folder, unless a person
        overrides it with a reason: the override is recorded (and counted as a process failure)."""
        self.db.execute("BEGIN IMMEDIATE")  # check and record in one step: two readers serialize
        try:
            before = self.db.execute("SELECT * FROM seals WHERE experiment = ? AND split_hash = ? "
                                     "ORDER BY id", (experiment, split_hash)).fetchall()
            if before and not (override or "").strip():
                first = dict(before[0])
                raise LedgerError(
                    f"the sealed test split of {experiment!r} (content {split_hash[:12]}) was already "
                    f"read {len(before)} time(s), first at {first['created_at']} into {first['output']} "
                    f"({first['reason']}); a second read makes it a validation split. A person may "
                    "override with --unseal \"reason\" (recorded in the ledger)")
            seal = self._insert("seals", experiment=experiment, split_hash=split_hash, reason=reason,
                                output=output, actor=actor, override=override if before else None)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        if before and record_override:  # the override, as every override is: with its reason, as a process failure
            self.add_override(5, "sealed-split", f"{command}: read {experiment!r} test split again: "
                              f"{override}", actor)
        return seal

    # -- learning canaries ------------------------------------------------------------------
    def add_canary(self, run_id: int | None, result: dict) -> int:
        """One canary's result (training/canary: the JSON `skillos canary --json` prints). Whether
        it passed is read from its own verdicts (the trained run an improvement, no control one),
        never from a `passed` field a caller could set."""
        control = result["control"]
        return self._insert(
            "canaries", run_id=run_id, trainer=result["trainer"], code_hash=result["code_hash"],
            metric=result["metric"], n=result["n"], before_rate=result["before"], after_rate=result["after"],
            b=result["b"], c=result["c"], p=result["p"], verdict=result["verdict"], control_b=control["b"],
            control_c=control["c"], control_p=control["p"], control_verdict=control["verdict"],
            passed=int(canary_passed(result)), quick=int(bool(result.get("quick"))),
            result_json=json.dumps(result, sort_keys=True, default=str))

    def canary_looks(self, trainer: str, games: str, up_to: int | None = None) -> int:
        """How many canaries of `trainer` were judged on the sealed held-out games `games` (their
        content digest), at the default size; `up_to`: counting rows up to that id only."""
        rows = self.db.execute("SELECT id, result_json FROM canaries WHERE trainer = ? AND quick = 0"
                               + (" AND id <= ?" if up_to is not None else ""),
                               (trainer, up_to) if up_to is not None else (trainer,)).fetchall()
        return sum(_sealed_games(_parsed(row["result_json"])) == games for row in rows)

    def passing_canaries(self, trainer: str) -> list[dict]:
        """Every canary of `trainer` that passed by its own recorded verdicts, at its default size,
        judged on the sealed split with its looks recounted here (the pooled p times every judged
        look at the same games up to it stays below the alpha it was judged at), recorded by a
        canary run that finished and was not invalidated; newest first, each with its `result`
        (the JSON it recorded: its identity) and `looks`. Whether one still vouches for the code
        as it is now is the caller's to recompute (gates/learning.py)."""
        try:
            rows = self.db.execute("SELECT * FROM canaries WHERE trainer = ? AND quick = 0 AND run_id IS NOT NULL "
                                   "ORDER BY id DESC", (trainer,)).fetchall()
        except sqlite3.OperationalError:  # a read-only ledger from before canaries: none recorded
            return []
        out = []
        for row in map(dict, rows):
            try:
                row["result"] = json.loads(row["result_json"])
            except (TypeError, ValueError):
                continue
            if not canary_passed(row["result"]) or row["verdict"] != row["result"].get("verdict"):
                continue
            games = _sealed_games(row["result"])
            row["looks"] = self.canary_looks(trainer, games, up_to=row["id"]) if games else 0
            if not games or not _survives_looks(row["result"], row["looks"]):
                continue
            run = self.corrected("runs", self.row("runs", row["run_id"]))
            if run["valid"] and run["status"] == "finished":
                out.append(row)
        return out

    def invalidated_canary_in(self, folder) -> dict | None:
        """The newest canary recorded from `folder` (its --out) whose run was invalidated: {id,
        reason}, or None. A rerun into that folder would reuse its finished runs and undo the
        invalidation."""
        target = str(Path(folder).resolve())
        try:
            rows = self.db.execute("SELECT id, run_id, result_json FROM canaries ORDER BY id DESC").fetchall()
        except sqlite3.OperationalError:  # a read-only ledger from before canaries
            return None
        for row in rows:
            result = _parsed(row["result_json"])
            out = result.get("output_dir") if isinstance(result, dict) else None
            if not out or str(Path(out).resolve()) != target or row["run_id"] is None:
                continue
            run = self.corrected("runs", self.row("runs", row["run_id"]))
            if not run["valid"]:
                return {"id": row["id"], "reason": run["invalid_reason"]}
        return None

    def canary_timings(self, trainer: str, quick: bool) -> list[dict]:
        """The wall time of every recorded canary of `trainer` at `quick`'s size: {wall_s, machine
        (the devices.machine_kind it ran on; None: recorded before canaries said), config (its
        canary config digest)}, oldest first; what an estimate of the next one's time reads."""
        try:
            rows = self.db.execute("SELECT result_json FROM canaries WHERE trainer = ? AND quick = ? ORDER BY id",
                                   (trainer, int(bool(quick)))).fetchall()
        except sqlite3.OperationalError:  # a read-only ledger from before canaries
            return []
        out = []
        for row in rows:
            result = _parsed(row["result_json"])
            wall = result.get("wall_s") if isinstance(result, dict) else None
            if isinstance(wall, (int, float)) and not isinstance(wall, bool) and wall > 0:
                machine, ran = result.get("machine"), result.get("identity")
                out.append({"wall_s": float(wall), "machine": machine if isinstance(machine, dict) else None,
                            "config": ran.get("config") if isinstance(ran, dict) else None})
        return out

    def canaries(self, trainer: str | None = None) -> list[dict]:
        query = "SELECT * FROM canaries" + (" WHERE trainer = ?" if trainer else "") + " ORDER BY id"
        return [dict(r) for r in self.db.execute(query, (trainer,) if trainer else ())]

    # -- gate 7's watches (ledger/watchdog.py) --------------------------------------------------
    def start_watch(self, job_pids: list, paths: list, gpus: int, after_minutes: float, log: str | None) -> int:
        """A watchdog (this process) starts watching a job's processes and paths."""
        return self._insert("watches", stamp="started_at", watcher_pid=os.getpid(), host=socket.gethostname(),
                            job_pids=json.dumps(list(job_pids)), paths=json.dumps([str(p) for p in paths]),
                            gpus=gpus, after_minutes=after_minutes, log=log)

    def watch_looked(self, watch_id: int, alarms: int, job_ended: bool) -> None:
        """A look: when, the alarms so far, and (once) when the job was first seen ended."""
        stamp = now()
        self.db.execute("UPDATE watches SET last_look_at = ?, alarms = ?, job_ended_at = COALESCE(job_ended_at, ?) "
                        "WHERE id = ?", (stamp, alarms, stamp if job_ended else None, watch_id))

    def end_watch(self, watch_id: int, alarms: int, detail: str) -> None:
        """The watchdog stopped itself (or was stopped): why, in `detail`."""
        self.db.execute("UPDATE watches SET ended_at = ?, alarms = ?, status = 'ended', detail = ? "
                        "WHERE id = ? AND ended_at IS NULL", (now(), alarms, redact_text(detail), watch_id))

    def watches(self) -> list[dict]:
        """Every watch, oldest first. `state`: watching (its watchdog is alive on this host), ended,
        lost (recorded as watching, its watchdog gone without ending it) or unknown (on another host:
        this one cannot see its processes)."""
        try:
            rows = [dict(r) for r in self.db.execute("SELECT * FROM watches ORDER BY id")]
        except sqlite3.OperationalError:  # a read-only ledger from before watches
            return []
        here = socket.gethostname()
        for row in rows:
            for key in ("job_pids", "paths"):
                row[key] = _parsed(row[key]) or []
            if row["status"] == "ended":
                row["state"] = "ended"
            elif row["host"] != here:
                row["state"] = "unknown"
            else:
                row["state"] = "watching" if pid_alive(row["watcher_pid"]) else "lost"
        return rows

    def orphaned_runs(self, since: str) -> list[dict]:
        """Runs started on this host at or after `since` that are still [running] while the process
        that wrote them is gone: each a job that died without its final row."""
        try:
            rows = self.db.execute("SELECT id, experiment_id, pid, started_at FROM runs WHERE status = 'running' "
                                   "AND ended_at IS NULL AND host = ? AND started_at >= ? AND pid IS NOT NULL",
                                   (socket.gethostname(), since)).fetchall()
        except sqlite3.OperationalError:  # a ledger from before runs said their process
            return []
        return [dict(r) for r in rows if not pid_alive(r["pid"])]

    # -- failures ---------------------------------------------------------------------------
    def add_failure(self, what: str, category: str, modes=(), kind: str = "scientific",
                    cost_gpu_hours: float | None = None, cost_wall_hours: float | None = None,
                    detected_by: str = "agent", gate: str | None = None,
                    experiment_id: int | None = None, run_id: int | None = None,
                    status: str = "open", token: str | None = None) -> int:
        """Record a failure. `token` makes a retried write idempotent (no duplicate row)."""
        if not (what or "").strip():
            raise LedgerError("a failure needs --what: what went wrong")
        _choice(category, taxonomy.CATEGORIES, "category")
        _choice(kind, taxonomy.KINDS, "kind")
        _choice(detected_by, taxonomy.DETECTORS, "detected-by")
        _choice(status, taxonomy.STATUSES, "status")
        for mode in modes:
            _choice(mode, taxonomy.MODES, "mode")
        for cost in (cost_gpu_hours, cost_wall_hours):
            if cost is not None and cost < 0:
                raise LedgerError(f"a cost cannot be negative, got {cost}")
        self.db.execute("BEGIN IMMEDIATE")
        try:
            if token:
                row = self.db.execute("SELECT id FROM failures WHERE token = ?", (token,)).fetchone()
                if row:
                    self.db.execute("COMMIT")
                    return row["id"]
            fid = self._insert("failures", what=redact_text(what), category=category, kind=kind,
                               cost_gpu_hours=cost_gpu_hours, cost_wall_hours=cost_wall_hours,
                               detected_by=detected_by, gate=gate, experiment_id=experiment_id,
                               run_id=run_id, status=status, token=token)
            for mode in sorted(set(modes)):
                self.db.execute("INSERT INTO failure_modes VALUES (?, ?)", (fid, mode))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return fid

    def failure(self, fid: int) -> dict:
        row = self.corrected("failures", self.row("failures", fid))
        row["modes"] = [r["mode"] for r in self.db.execute(
            "SELECT mode FROM failure_modes WHERE failure_id = ? ORDER BY mode", (fid,))]
        row["fixes"] = [dict(r) for r in self.db.execute(
            "SELECT * FROM fixes WHERE failure_id = ? ORDER BY id", (fid,))]
        return row

    def failures(self, category: str | None = None, status: str | None = None,
                 text: str | None = None, experiment_id: int | None = None,
                 limit: int | None = None) -> list[dict]:
        """Every matching failure as `failure(id)` returns it, read in four queries (the rows,
        then their corrections, modes and fixes in one batch each), not four per failure.
        `status` is the current one (corrections applied); `limit`: only the newest that many
        (still in id order; `failures_page` also says how many it left out)."""
        condition, args = failure_filter(category, status, text, experiment_id)
        ids = f"{CURRENT_FAILURES} SELECT id FROM current_failures WHERE {condition}"
        if limit is not None:
            if limit < 0:
                raise LedgerError(f"a limit of {limit} failures: give 0 or more (none: all of them)")
            ids, args = ids + " ORDER BY id DESC LIMIT ?", args + [limit]
        with self.snapshot():  # the four reads see one state
            return self._failures_in(ids, args)

    def failures_page(self, limit: int | None = None, **filters) -> dict:
        """The newest `limit` matching failures (None: all) and how many match, read in one
        snapshot: `shown` of `of`, so a cut list says what it leaves out."""
        condition, args = failure_filter(**filters)
        with self.snapshot():
            total = self.db.execute(f"{CURRENT_FAILURES} SELECT count(*) FROM current_failures WHERE {condition}",
                                    args).fetchone()[0]
            rows = self.failures(limit=limit, **filters)
        return {"shown": len(rows), "of": total, "limit": limit, "failures": rows}

    @contextlib.contextmanager
    def writing(self):
        """One write transaction: every row written inside lands together or not at all (a kill
        or an error in the middle leaves none of them)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    @contextlib.contextmanager
    def snapshot(self):
        """One read transaction (unless one is open already): the reads inside see one state of
        the file while other processes append."""
        if self.db.in_transaction:
            yield
            return
        self.db.execute("BEGIN")
        try:
            yield
        finally:
            self.db.execute("COMMIT")

    def _failures_in(self, ids: str, args: list) -> list[dict]:
        corrections, modes, fixes = {}, {}, {}
        for r in self.db.execute(f"SELECT * FROM corrections WHERE table_name = 'failures' AND row_id IN ({ids}) "
                                 "ORDER BY id", args):
            corrections.setdefault(r["row_id"], []).append(dict(r))
        for r in self.db.execute(f"SELECT failure_id, mode FROM failure_modes WHERE failure_id IN ({ids}) "
                                 "ORDER BY failure_id, mode", args):
            modes.setdefault(r["failure_id"], []).append(r["mode"])
        for r in self.db.execute(f"SELECT * FROM fixes WHERE failure_id IN ({ids}) ORDER BY id", args):
            fixes.setdefault(r["failure_id"], []).append(dict(r))
        rows = []
        cursor = self.db.cursor()
        cursor.row_factory = None  # plain tuples: at 100,000 failures the per-row Row objects showed
        cursor.execute(f"SELECT * FROM failures WHERE id IN ({ids}) ORDER BY id", args)
        columns = [d[0] for d in cursor.description]
        for values in cursor:
            row = dict(zip(columns, values))
            fid = row["id"]
            own = corrections.get(fid)
            if own:
                row = self.corrected("failures", row, own)
            else:  # what corrected gives a row with no corrections
                row.update(valid=True, invalid_reason=None, conclusion=None, conclusions=[], corrections=[])
            row["modes"], row["fixes"] = modes.get(fid, []), fixes.get(fid, [])
            rows.append(row)
        return rows

    def set_failure_status(self, fid: int, status: str, reason: str, actor: str = "agent") -> int:
        _choice(status, taxonomy.STATUSES, "status")
        return self.correct("failures", fid, "status", reason, value=status, actor=actor)

    # -- fixes (gate 6) -------------------------------------------------------------------
    def add_fix(self, failure_id: int, description: str, metric: str, direction: str,
                expected_size: float | None = None, before_run_id: int | None = None) -> int:
        """A fix names the failure, the metric it should move, which way and by how much, and
        the run before it; `verify-fix` later compares that run with one after."""
        self.row("failures", failure_id)
        if metric not in taxonomy.MEASURED_METRICS:  # a fix must move a number that is measured
            raise LedgerError(f"metric {metric!r} is not measured by any run, so no verify-fix could check it; "
                              f"measured metrics: {', '.join(taxonomy.MEASURED_METRICS)}")
        _choice(direction, ("up", "down"), "direction")
        if before_run_id is not None:
            self.row("runs", before_run_id)
        return self._insert("fixes", failure_id=failure_id, description=redact_text(description),
                            metric=metric, direction=direction, expected_size=expected_size,
                            before_run_id=before_run_id)

    def fix(self, fix_id: int) -> dict:
        row = self.corrected("fixes", self.row("fixes", fix_id))
        for c in row["corrections"]:
            if c["kind"] == "verdict":
                verdict = json.loads(c["value"])
                row.update(verdict=verdict["verdict"], after_run_id=verdict["after_run_id"],
                           detail=c["reason"])
        return row

    def record_fix_verdict(self, fix_id: int, after_run_id: int, verified: bool, detail: str) -> None:
        """The verdict on a fix, and the failure's status with it: verified, or reopened."""
        fix = self.row("fixes", fix_id)
        verdict = "verified" if verified else "reopened"
        self.correct("fixes", fix_id, "verdict", detail,
                     value=json.dumps({"verdict": verdict, "after_run_id": after_run_id}))
        self.set_failure_status(fix["failure_id"], "verified" if verified else "open", detail)

    # -- gates and overrides ------------------------------------------------------------------
    def add_gate_result(self, gate: int, check_name: str, status: str, config_key: str = "",
                        seen: str = "", expected: str = "", experiment_id: int | None = None,
                        run_id: int | None = None) -> int:
        return self._insert("gate_results", gate=gate, check_name=check_name, status=status,
                            config_key=config_key, seen=redact_text(str(seen)),
                            expected=redact_text(str(expected)), experiment_id=experiment_id,
                            run_id=run_id)

    def add_override(self, gate: int, check_name: str, reason: str, actor: str,
                     experiment_id: int | None = None) -> int:
        """An override is recorded with its reason, and as an operational failure (process)."""
        if not (reason or "").strip():
            raise LedgerError("an override needs a reason")
        oid = self._insert("overrides", gate=gate, check_name=check_name, reason=redact_text(reason),
                           actor=actor, experiment_id=experiment_id)
        self.add_failure(f"gate {gate} check {check_name} overridden by {actor}: {reason}",
                         "process", kind="operational", detected_by="gate", gate=str(gate),
                         experiment_id=experiment_id)
        return oid

    # -- export -----------------------------------------------------------------------------
    def rows(self, table: str) -> list[dict]:
        if table not in TABLES:
            raise LedgerError(f"unknown table {table!r}; tables: {', '.join(TABLES)}")
        return [dict(r) for r in self.db.execute(f"SELECT * FROM {table} ORDER BY rowid")]

    @classmethod
    def read_only(cls, path: str | Path) -> "Ledger":
        """The ledger opened for reading only (SQLite mode=ro): no migration, no write, no file
        created; what `skillos view` reads while runs keep appending. Every read method works."""
        path = Path(path)
        if not path.is_file():
            raise LedgerError(f"{path}: no ledger file")
        ledger = cls.__new__(cls)
        ledger.path = path
        try:
            ledger.db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10,
                                        isolation_level=None, check_same_thread=False)
            ledger.db.row_factory = sqlite3.Row
            app_id = ledger.db.execute("PRAGMA application_id").fetchone()[0]
            version = ledger.db.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"{path}: not a usable skillos ledger ({exc})") from None
        if app_id != APPLICATION_ID:
            ledger.db.close()
            raise LedgerError(f"{path}: not a skillos ledger (application_id {app_id:#x})")
        if version > SCHEMA_VERSION:  # its tables may mean what this skillos cannot read: never guess
            ledger.db.close()
            raise LedgerError(f"{path}: ledger schema {version} is newer than this skillos ({SCHEMA_VERSION}); "
                              "upgrade skillos")
        ledger.version = version
        return ledger


def failure_filter(category: str | None = None, status: str | None = None, text: str | None = None,
                   experiment_id: int | None = None) -> tuple[str, list]:
    """A condition on CURRENT_FAILURES' rows and its arguments: the filters of `failures()`."""
    conditions, args = ["1"], []
    if category:
        conditions, args = conditions + ["category = ?"], args + [category]
    if status:
        conditions, args = conditions + ["status = ?"], args + [status]
    if experiment_id:
        conditions, args = conditions + ["experiment_id = ?"], args + [experiment_id]
    if text:  # a substring: % and _ in it are literal characters, not wildcards
        escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        conditions, args = conditions + ["what LIKE ? ESCAPE '\\'"], args + [f"%{escaped}%"]
    return " AND ".join(conditions), args


def _choice(value, allowed, what):
    if value not in allowed:
        raise LedgerError(f"unknown {what} {value!r}; choose one of: {', '.join(allowed)}")
