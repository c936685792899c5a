"""The main job end to end, through the real CLI, on a small n."""

import json

import pytest

pytest.importorskip("alfworld", reason="needs the [alfworld] extra")

from conftest import run_cli  # noqa: E402
from skillos.repo import validate_path  # noqa: E402

pytestmark = pytest.mark.alfworld


def test_quickstart_end_to_end(tmp_path, game_cache):
    out = tmp_path / "run"
    env = {"SKILLOS_CACHE": str(game_cache)}
    result = run_cli("quickstart", "--n-games", 6, "--n-train-games", 6, "--json", "--out", out, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert set(report["arms"]) == {"no_memory", "closed_loop"}
    for arm in report["arms"].values():
        assert arm["attempted"] == 6 and arm["measured"] + arm["unmeasured"] == 6
        assert sum(t["attempted"] for t in arm["by_task_type"].values()) == 6
        assert arm["coerced_actions"] == 0 and arm["actions"] > 0
    (comp,) = report["comparisons"]
    assert comp["treatment"] == "closed_loop" and comp["control"] == "no_memory"
    assert comp["n_paired"] + comp["n_dropped"] == 6
    assert {"p_value", "ci_low", "ci_high", "mde", "p_adjusted"} <= set(comp)
    rows = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    assert len(rows) == 12
    assert {r["arm"] for r in rows} == {"no_memory", "closed_loop"}
    assert {(r["game_id"]) for r in rows if r["arm"] == "no_memory"} == \
        {(r["game_id"]) for r in rows if r["arm"] == "closed_loop"}  # paired: the same games
    assert set(rows[0]) >= {"game_id", "task_type", "success", "steps", "coerced_actions",
                            "skills_retrieved", "repo_size", "unmeasured", "unmeasured_reason"}
    assert all(r["repo_size"] == 0 and r["skills_retrieved"] == [] for r in rows if r["arm"] == "no_memory")
    train_rows = (out / "curation.jsonl").read_text().splitlines()
    assert len(train_rows) == 6
    assert validate_path(out / "repo-closed_loop") == [] and any((out / "repo-closed_loop").iterdir())
    assert json.loads((out / "report.json").read_text()) == report

    # the run recorded itself in the ledger ($SKILLOS_HOME): experiment, a run and an eval per arm
    listed = json.loads(run_cli("ledger", "experiments", "list", "--json").stdout)
    assert [(e["name"], e["status"], e["valid"]) for e in listed] == [("quickstart", "measured", True)]
    shown = json.loads(run_cli("ledger", "experiments", "show", str(listed[0]["id"]), "--json").stdout)
    assert sorted(r["arm"] for r in shown["runs"]) == ["closed_loop", "no_memory"]
    for run in shown["runs"]:
        assert run["status"] == "finished" and run["ended_at"] and run["host"]
        (ev,) = run["evals"]
        assert ev["n_attempted"] == 6 and ev["n_measured"] + ev["n_unmeasured"] == 6
        assert ev["successes"] == report["arms"][run["arm"]]["successes"]
        assert ev["jsonl_path"].endswith("games.jsonl") and len(ev["jsonl_sha256"]) == 64
    assert report["ledger"]["experiment_id"] == listed[0]["id"]

    # the people's report prints denominators and the statistics
    table = run_cli("eval", out / "config.yaml", "--out", tmp_path / "second", env=env)
    assert table.returncode == 0, table.stderr[-2000:]
    for text in ("no_memory", "closed_loop", "/6", "McNemar p (exact)", "95% CI", "MDE at 80% power"):
        assert text in table.stdout

    again = run_cli("quickstart", "--n-games", 6, "--out", out, env=env)
    assert again.returncode == 2 and "not empty" in again.stderr and "Traceback" not in again.stderr


def test_eval_controls_static_and_shuffled_arms(tmp_path, game_cache):
    skills = tmp_path / "skills" / "where-to-find-apple"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text("---\nname: where-to-find-apple\ndescription: apples\n---\nfridge\n")
    config = tmp_path / "c.yaml"
    config.write_text(
        "experiment: {name: controls}\n"
        "env: {n_games: 3, n_train_games: 3}\n"
        f"eval: {{arms: [no_memory, static_repo, shuffled], static_repo: {skills.parent}}}\n")
    result = run_cli("eval", config, "--json", "--out", tmp_path / "run",
                     env={"SKILLOS_CACHE": str(game_cache)})
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert [c["treatment"] for c in report["comparisons"]] == ["static_repo", "shuffled"]
    assert report["arms"]["static_repo"]["final_repo_size"] == 1
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"eval: {{arms: [no_memory, static_repo], static_repo: {tmp_path / 'nope.md'}}}\n")
    (tmp_path / "nope.md").write_text("x")
    result = run_cli("eval", bad, "--out", tmp_path / "run2", env={"SKILLOS_CACHE": str(game_cache)})
    assert result.returncode == 2 and "must be a folder" in result.stderr
    assert not (tmp_path / "run2").exists()  # nothing half-written


def test_parallel_arms_give_the_same_rows_as_sequential(tmp_path, game_cache, monkeypatch):
    from skillos import config
    from skillos.evals.experiment import run_eval

    monkeypatch.setenv("SKILLOS_CACHE", str(game_cache))
    results = {}
    for workers in (1, 2):
        cfg = config.from_dict({"env": {"n_games": 4, "n_train_games": 4}, "eval": {"workers": workers}})
        run_eval(cfg, tmp_path / f"w{workers}")
        lines = (tmp_path / f"w{workers}" / "games.jsonl").read_text().splitlines()
        results[workers] = sorted(lines)
    assert len(results[1]) == 8 and results[1] == results[2]


def test_missing_engine_is_a_one_line_error(tmp_path, monkeypatch):
    import sys

    from skillos import config
    from skillos.errors import SkillosError
    from skillos.evals.envs.alfworld import scenes
    from skillos.evals.experiment import run_eval

    scenes.alfworld_root.cache_clear()
    monkeypatch.setitem(sys.modules, "fast_downward", None)  # as if the extra were not installed
    try:
        with pytest.raises(SkillosError, match=r"pip install 'skillos\[alfworld\]'"):
            run_eval(config.from_dict({"env": {"n_games": 2}}), tmp_path / "run")
    finally:
        scenes.alfworld_root.cache_clear()
    assert not (tmp_path / "run").exists()
