"""The ledger under concurrent writers, kills, corrupt files and planted secrets."""

import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli
from skillos.ledger import Ledger, LedgerError

WRITER = Path(__file__).with_name("ledger_writer.py")


def sqlite_file(path, statement):
    """A SQLite file that some other program wrote."""
    db = sqlite3.connect(path)
    db.execute(statement)
    db.commit()
    db.close()
    return path


def test_eight_writers_some_killed_lose_nothing_committed(tmp_path):
    path = tmp_path / "ledger.db"
    Ledger(path).close()
    procs = [subprocess.Popen([sys.executable, str(WRITER), str(path), str(w), "500"],
                              stdout=subprocess.PIPE, text=True) for w in range(8)]
    kill_after = {0: 50, 3: 150, 5: 300}  # worker -> committed rows before its SIGKILL
    committed = {w: [] for w in range(8)}
    for w, threshold in kill_after.items():
        for line in procs[w].stdout:  # read its commits as they happen, then kill mid-run
            committed[w].append(int(line))
            if len(committed[w]) >= threshold:
                procs[w].send_signal(signal.SIGKILL)
                break
    for w, proc in enumerate(procs):
        out, _ = proc.communicate(timeout=600)
        committed[w] += [int(line) for line in out.split()]
        if w not in kill_after:
            assert proc.returncode == 0 and len(committed[w]) == 500
    killed = list(kill_after)
    with Ledger(path) as ledger:
        rows = [r["what"] for r in ledger.rows("failures")]
        assert ledger.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert len(rows) == len(set(rows))  # nothing duplicated
    for w, seqs in committed.items():
        mine = {r for r in rows if r.startswith(f"w{w}-")}
        assert {f"w{w}-{s}" for s in seqs} <= mine  # every committed row is there
        assert mine == {f"w{w}-{i}" for i in range(len(mine))}  # a prefix: no gaps
    stored = {w: sum(r.startswith(f"w{w}-") for r in rows) for w in killed}
    assert any(n < 500 for n in stored.values()), stored  # the kills landed mid-run


def test_corrupt_or_foreign_file_is_a_clear_error_never_a_new_ledger(tmp_path):
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"this is not a database at all " * 200)
    with pytest.raises(LedgerError, match="not a usable skillos ledger"):
        Ledger(corrupt)
    assert corrupt.read_bytes().startswith(b"this is not")  # untouched
    with pytest.raises(LedgerError, match="not a skillos ledger"):
        Ledger(sqlite_file(tmp_path / "foreign.db", "CREATE TABLE customers (id INTEGER)"))
    with pytest.raises(LedgerError, match="another application"):
        Ledger(sqlite_file(tmp_path / "other.db", "PRAGMA application_id = 42"))
    home = tmp_path / "home"
    home.mkdir()
    (home / "ledger.db").write_bytes(b"garbage" * 500)
    result = run_cli("ledger", "failures", "list", env={"SKILLOS_HOME": str(home)})
    assert result.returncode == 2 and "not a usable skillos ledger" in result.stderr
    assert "Traceback" not in result.stderr


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "l.db"
    Ledger(path).close()
    sqlite_file(path, "PRAGMA user_version = 99")
    with pytest.raises(LedgerError, match="newer than this skillos"):
        Ledger(path)
    with pytest.raises(LedgerError, match="ledger schema 99 is newer than this skillos"):
        Ledger.read_only(path)  # what the viewer reads: never read without a word


def test_planted_secrets_never_reach_the_ledger(tmp_path, monkeypatch):
    secret = "sk-live-planted0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("HF_TOKEN", "hf_plantedTOKEN0123456789")
    path = tmp_path / "l.db"
    with Ledger(path) as ledger:
        eid = ledger.add_experiment("leak", f"uses key {secret}", "")
        run = ledger.start_run(eid, "arm", {"executor": {"api_key": secret, "max_tokens": 64},
                                            "note": "token hf_plantedTOKEN0123456789"}, 0,
                               f"openai key={secret}")
        ledger.end_run(run, "crashed", f"401 for key {secret}")
        ledger.add_failure(f"the call with {secret} failed", "process")
        ledger.add_override(1, "lr", f"person said so; key {secret}", "person", eid)
        run_row = ledger.run(run)
    raw = path.read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("l.db-*"))
    assert secret.encode() not in raw and b"hf_plantedTOKEN0123456789" not in raw
    assert '"max_tokens": 64' in run_row["config_json"]  # ordinary settings are kept
    result = run_cli("ledger", "failures", "add", "--what", f"leaked {secret}", "--category",
                     "process", env={"OPENAI_API_KEY": secret})
    assert result.returncode == 0 and secret not in result.stdout


def test_invalidated_experiment_is_not_evidence(tmp_path):
    with Ledger(tmp_path / "l.db") as ledger:
        good = ledger.add_experiment("good")
        ledger.correct("experiments", good, "status", "eval finished", value="measured")
        stale = ledger.add_experiment("stale-baseline")
        ledger.correct("experiments", stale, "invalidate", "baseline measured on old code")
        assert [e["id"] for e in ledger.evidence()] == [good]
        shown = ledger.experiment(stale)
        assert shown["valid"] is False and "old code" in shown["invalid_reason"]
        assert len(ledger.experiments()) == 2  # nothing deleted
        with pytest.raises(LedgerError, match="needs a reason"):
            ledger.correct("experiments", good, "invalidate", "")
