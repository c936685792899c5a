"""skillos import: other tools' per-game files become ledger runs that compare re-tests, with the
exact p-values a person computes by hand, unpaired games counted and bad values refused."""

import json
import sqlite3

import pytest
from conftest import run_cli
from skillos.ledger import Ledger

GAMES = [f"task-{i:02d}" for i in range(40)]
# by hand: the control wins the first 15 games; the treatment wins those too, plus 9 more (b=9),
# and loses 2 of the control's wins (c=2): exact McNemar p = 2 * P(X <= 2 | n=11, 1/2)
CONTROL = {g: i < 15 for i, g in enumerate(GAMES)}
TREATMENT = {g: (i < 15 and i not in (3, 7)) or 15 <= i < 24 for i, g in enumerate(GAMES)}
P_BY_HAND = 2 * (1 + 11 + 55) / 2 ** 11


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _compare(env, family="other-tool"):
    result = run_cli("compare", "treated", "--control", "base", "--family", family, "--json", env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_long_rows_mapped_by_flags_are_re_tested_exactly(tmp_path, skillos_home):
    rows = [{"id": g, "condition": "base", "outcome": "C" if CONTROL[g] else "I"} for g in GAMES]
    rows += [{"id": g, "condition": "treated", "outcome": TREATMENT[g]} for g in GAMES]
    src = _write(tmp_path / "results.jsonl", rows)
    env = {"SKILLOS_HOME": str(skillos_home)}
    done = run_cli("import", src, "--experiment", "other-tool", "--game-col", "id", "--arm-col", "condition",
                   "--success-col", "outcome", "--json", env=env)
    assert done.returncode == 0, done.stderr
    recorded = json.loads(done.stdout)
    assert {r["arm"]: r["denominators"]["successes"] for r in recorded["runs"]} == {"base": 15, "treated": 22}
    arm = _compare(env)["arms"][0]
    assert (arm["comparison"]["b"], arm["comparison"]["c"]) == (9, 2)
    assert arm["comparison"]["p_value"] == pytest.approx(P_BY_HAND)
    assert arm["denominators"]["attempted"] == 40
    with Ledger(skillos_home / "ledger.db") as ledger:  # an import ends measured, never left `planned`
        assert ledger.experiment(recorded["experiment_id"])["status"] == "measured"
    db = sqlite3.connect(skillos_home / "ledger.db")
    configs = [json.loads(c) for (c,) in db.execute("SELECT config_json FROM runs")]
    assert all(c["imported"]["sources"] == {str(src.resolve()): recorded["sources"][str(src.resolve())]}
               for c in configs)


def test_one_file_per_arm_with_unpaired_games_counted_not_guessed(tmp_path, skillos_home):
    folder = tmp_path / "eval_arms"
    folder.mkdir()
    _write(folder / "base.jsonl", [{"game_id": g, "success": CONTROL[g]} for g in GAMES[:30]])
    # the treated file lacks 2 of the control's games and has 3 the control never played, one unmeasured
    treated = [{"game_id": g, "success": TREATMENT[g]} for g in GAMES[2:33]] + [{"game_id": "extra", "success": None}]
    _write(folder / "treated.jsonl", treated)
    env = {"SKILLOS_HOME": str(skillos_home)}
    done = run_cli("import", folder / "base.jsonl", folder / "treated.jsonl", "--experiment", "other-tool", env=env)
    assert done.returncode == 0, done.stderr
    assert "1 unmeasured of 32 games" in done.stdout
    result = _compare(env)
    arm = result["arms"][0]
    assert result["common_games"] == 28 and arm["comparison"]["n_paired"] == 28
    assert any("denominators differ" in why for why in arm["why_not"])
    assert arm["verdict"]["word"] != "improvement"


def test_wide_rows_through_a_mapping_file(tmp_path, skillos_home):
    src = _write(tmp_path / "wide.jsonl", [{"game": g, "no_skill": int(CONTROL[g]), "with_skill": int(TREATMENT[g])}
                                           for g in GAMES])
    mapping = tmp_path / "map.yaml"
    mapping.write_text("game: game\narms: {no_skill: base, with_skill: treated}\n")
    env = {"SKILLOS_HOME": str(skillos_home)}
    assert run_cli("import", src, "--experiment", "other-tool", "--mapping", mapping, env=env).returncode == 0
    assert _compare(env)["arms"][0]["comparison"]["p_value"] == pytest.approx(P_BY_HAND)


@pytest.mark.parametrize("rows, message", [
    ([{"game_id": "a", "success": "maybe"}], "line 1: success value 'maybe' is not a success, a failure or a score"),
    ([{"game_id": "a", "success": 1.5}], "line 1: success value 1.5 is not a success, a failure or a score"),
    ([{"game_id": "a", "success": -0.25}], "line 1: success value -0.25 is not a success, a failure or a score"),
    ([{"game_id": "a", "success": True}, {"game_id": "a", "success": False}], "line 2: game 'a' appears twice"),
    ([{"success": True}], "line 1: no game id (column 'game_id'"),
    ([{"game_id": "a", "won": True}], "line 1: no success field (column 'success'"),
    # names that would forge a line of output, or stand in as a Python repr
    ([{"game_id": "a", "arm": "treated\nimported 9 runs: treated wins", "success": True}],
     "line 1: the arm 'treated\\nimported 9 runs: treated wins' holds a control character"),
    ([{"game_id": "a\x1b[2Jb", "success": True}], "line 1: the game id 'a\\x1b[2Jb' holds a control character"),
    ([{"game_id": {"id": 1}, "success": True}], "line 1: the game id is a JSON dict, not a string or a number"),
    ([{"game_id": "a", "arm": ["x", "y"], "success": True}], "line 1: the arm is a JSON list, not a string"),
    ([{"game_id": True, "success": True}], "line 1: the game id is a JSON bool, not a string or a number"),
])
def test_a_bad_file_is_one_line_and_records_nothing(tmp_path, skillos_home, rows, message):
    src = _write(tmp_path / "bad.jsonl", rows)
    result = run_cli("import", src, "--experiment", "x", env={"SKILLOS_HOME": str(skillos_home)})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0 and message in result.stderr
    db = skillos_home / "ledger.db"
    assert not db.exists() or sqlite3.connect(db).execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0


def test_an_inspect_log_is_imported_by_its_samples(tmp_path, skillos_home):
    """A skillos run exported to inspect_ai's format and imported back is the same measurement."""
    pytest.importorskip("inspect_ai")
    run = tmp_path / "run"
    run.mkdir()
    rows = [{"arm": arm, "game_id": g, "success": won[g], "phase": "eval", "schema_version": 1}
            for arm, won in (("base", CONTROL), ("treated", TREATMENT)) for g in GAMES]
    _write(run / "games.jsonl", rows)
    env = {"SKILLOS_HOME": str(skillos_home)}
    exported = run_cli("export", "inspect", run, tmp_path / "log.eval", env=env)
    assert exported.returncode == 0, exported.stderr
    assert run_cli("import", tmp_path / "log.eval", "--experiment", "other-tool", env=env).returncode == 0
    arm = _compare(env)["arms"][0]
    assert (arm["comparison"]["b"], arm["comparison"]["c"]) == (9, 2)
    assert arm["comparison"]["p_value"] == pytest.approx(P_BY_HAND)


KEY = "sk-ant-api03-" + "Q7w8E9r0T1y2U3i4O5p6" * 3  # key-shaped: an arm named by a pasted key


def test_a_key_shaped_arm_name_is_stored_and_printed_as_a_stable_stand_in(tmp_path, skillos_home):
    from skillos.secrets import safe_name

    rows = [{"game_id": g, "arm": arm, "success": won} for g in GAMES
            for arm, won in (("base", CONTROL[g]), (KEY, TREATMENT[g]))]
    src = _write(tmp_path / "keyed.jsonl", rows)
    env = {"SKILLOS_HOME": str(skillos_home)}
    done = run_cli("import", src, "--experiment", "keyed", env=env)
    assert done.returncode == 0, done.stderr
    alias = safe_name(KEY)
    assert alias.startswith("[redacted-") and alias == safe_name(KEY) != safe_name(KEY[:-1] + "x")
    assert KEY[13:30] not in done.stdout + done.stderr and alias in done.stdout
    db = sqlite3.connect(skillos_home / "ledger.db")
    for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        assert not [r for r in db.execute(f"SELECT * FROM {table}") if KEY[13:30] in str(r)], table
    for path in (skillos_home / "imports").rglob("*"):
        assert not path.is_file() or KEY[13:30] not in path.read_text()
    compared = run_cli("compare", alias, "--control", "base", "--family", "keyed", "--json", env=env)
    assert compared.returncode == 0 and json.loads(compared.stdout)["arms"][0]["comparison"]["b"] == 9


def test_a_progress_line_never_prints_a_key():
    from skillos.safety import Ticker

    lines = []
    Ticker(lines.append, f"{KEY}: games played", 4)(0)
    assert lines and KEY[13:30] not in lines[0] and "[redacted]" in lines[0]


def test_an_import_is_bounded_before_it_writes_and_atomic(tmp_path, skillos_home, monkeypatch):
    from skillos.evals import imported
    from skillos.errors import SkillosError
    from skillos.ledger import Ledger

    wide = _write(tmp_path / "wide.jsonl", [{"game": g, **{f"arm{a}": 1 for a in range(imported.MAX_IMPORT_ARMS + 1)}}
                                            for g in GAMES])
    mapping = tmp_path / "map.yaml"
    mapping.write_text("game: game\narms: {" + ", ".join(f"arm{a}: a{a}" for a in range(65)) + "}\n")
    env = {"SKILLOS_HOME": str(skillos_home)}
    refused = run_cli("import", wide, "--experiment", "wide", "--mapping", mapping, env=env)
    assert refused.returncode == 2 and "line 1: more than 64 arms (65 so far" in refused.stderr
    assert refused.stderr.strip().count("\n") == 0
    db = skillos_home / "ledger.db"
    assert not db.exists() or sqlite3.connect(db).execute("SELECT COUNT(*) FROM experiments").fetchone()[0] == 0
    monkeypatch.setattr(imported, "MAX_IMPORT_BYTES", 100)
    with pytest.raises(SkillosError, match=r"wide.jsonl: 0 MiB, above the 0 MiB one result file may hold"):
        imported.read_results([wide], imported.Mapping.load(None))
    monkeypatch.undo()
    # killed (here: an error) after the first arm's rows were written: no run, no experiment left behind
    src = _write(tmp_path / "two.jsonl", [{"game_id": g, "arm": arm, "success": True} for g in GAMES[:4]
                                          for arm in ("a", "b")])
    with Ledger(skillos_home / "ledger.db") as ledger:
        real, calls = ledger.add_eval, []

        def dies_on_the_second(*args, **kwargs):
            calls.append(args)
            if len(calls) == 2:
                raise KeyboardInterrupt
            return real(*args, **kwargs)

        monkeypatch.setattr(ledger, "add_eval", dies_on_the_second)
        with pytest.raises(KeyboardInterrupt):
            imported.import_results(ledger, [src], "halves", imported.Mapping.load(None), skillos_home)
        assert ledger.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
        assert ledger.db.execute("SELECT COUNT(*) FROM experiments").fetchone()[0] == 0
        monkeypatch.undo()
        again = imported.import_results(ledger, [src], "halves", imported.Mapping.load(None), skillos_home)
        assert [r["arm"] for r in again["runs"]] == ["a", "b"]  # the rerun completes it


def test_an_imported_experiments_report_says_why_there_is_none(tmp_path, skillos_home):
    src = _write(tmp_path / "r.jsonl", [{"game_id": g, "arm": arm, "success": True} for g in GAMES[:4]
                                        for arm in ("base", "treated")])
    env = {"SKILLOS_HOME": str(skillos_home)}
    assert run_cli("import", src, "--experiment", "elsewhere", env=env).returncode == 0
    report = run_cli("export", "report", "elsewhere", tmp_path / "rep", env=env)
    assert report.returncode == 2 and "no run recorded" not in report.stderr
    assert "its 2 runs were imported (skillos import)" in report.stderr and "--family elsewhere" in report.stderr


def test_a_folder_or_a_fifo_given_as_a_result_file_says_what_it_is(tmp_path, skillos_home):
    import os

    env = {"SKILLOS_HOME": str(skillos_home)}
    os.mkfifo(tmp_path / "pipe.jsonl")
    (tmp_path / "folder.jsonl").mkdir()
    for name, said in (("pipe.jsonl", "a FIFO, not a result file"), ("folder.jsonl", "a folder, not a result file"),
                       ("gone.jsonl", "no such file")):
        result = run_cli("import", tmp_path / name, "--experiment", "x", env=env)
        assert result.returncode == 2 and f"{name}: {said}" in result.stderr, result.stderr
