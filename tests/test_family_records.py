"""Records never inflate a family (class 6 of issue 24): resuming a finished eval adds no ledger
run; a run recorded twice is one member of its family; `compare ARM` names the experiment and
environment of every arm it took and refuses an arm name found in several experiments unless one
is chosen (the control comes from the compared arm's own experiment); `sweep` refuses a repo
curated on the games it is scored on; a bootstrap CI that excludes 0 while the exact test does not
reject is noted."""

import hashlib
import json

import pytest

from conftest import ROOT, run_cli
from skillos.errors import SkillosError
from skillos.evals import stats
from skillos.evals.compare import compare_runs
from skillos.ledger import Ledger
from skillos.ledger.store import LedgerError

QUICKSTART = ROOT / "evals" / "configs" / "reasoning-quickstart.yaml"
GAMES = [f"g{i:02d}" for i in range(30)]


def record(ledger, tmp_path, experiment, arm, wins, env="household", name=None, path=None):
    """One measured run of `arm` (games.jsonl written, its hash recorded) in `experiment`."""
    path = path or tmp_path / f"{experiment}-{arm}-{len(ledger.rows('runs'))}.jsonl"
    if not path.exists():
        path.write_text("".join(json.dumps({"arm": arm, "phase": "eval", "game_id": g, "success": i < wins})
                                + "\n" for i, g in enumerate(GAMES)))
    run = ledger.start_run(experiment, arm, config={"env": {"name": env}, "output": str(tmp_path)},
                           executor_fingerprint="heuristic")
    summary = {"attempted": 30, "measured": 30, "unmeasured": 0, "successes": wins, "coerced_actions": 0, "actions": 30}
    ledger.add_eval(run, arm, summary, str(path), hashlib.sha256(path.read_bytes()).hexdigest())
    ledger.end_run(run, "finished")
    return run, path


def compare(ledger, arms, control="no_memory", **kw):
    return compare_runs(ledger, arms, control, alpha=0.05, power=0.8, max_age_days=7, n_boot=500, **kw)


def test_a_run_recorded_twice_is_one_member_of_its_family(tmp_path):
    with Ledger(tmp_path / "ledger.db") as ledger:
        exp = ledger.add_experiment("q", config_hash="h1")
        record(ledger, tmp_path, exp, "no_memory", 10)
        arm, path = record(ledger, tmp_path, exp, "closed_loop", 25)
        other, _ = record(ledger, tmp_path, exp, "shuffled", 12)
        before = compare(ledger, [f"#{arm}"])
        for _ in range(3):  # the same measurement recorded again (a resumed, re-recorded run)
            record(ledger, tmp_path, exp, "closed_loop", 25, path=path)
        after = compare(ledger, [f"#{arm}"])
        assert before["family"]["size"] == after["family"]["size"] == 2
        assert after["arms"][0]["p_adjusted"] == before["arms"][0]["p_adjusted"]  # Holm p did not widen


def test_an_arm_name_found_in_several_experiments_is_refused_unless_chosen(tmp_path):
    with Ledger(tmp_path / "ledger.db") as ledger:
        a = ledger.add_experiment("quickstart", config_hash="h1")
        b = ledger.add_experiment("reasoning-quickstart", config_hash="h2")
        record(ledger, tmp_path, a, "no_memory", 10)
        record(ledger, tmp_path, a, "closed_loop", 20)
        record(ledger, tmp_path, b, "no_memory", 5, env="reasoning")
        newest, _ = record(ledger, tmp_path, b, "closed_loop", 29, env="reasoning")
        with pytest.raises(LedgerError) as err:
            compare(ledger, ["closed_loop"])
        message = str(err.value)
        assert "2 experiments" in message and "#1 quickstart" in message and "#2 reasoning-quickstart" in message
        assert "household" in message and "reasoning" in message and "--experiment" in message
        for chosen, exp, env in ((str(a), a, "household"), ("reasoning-quickstart", b, "reasoning")):
            result = compare(ledger, ["closed_loop"], experiment=chosen)
            arm, control = result["arms"][0], result["control"]
            assert (arm["experiment_id"], arm["env"], control["experiment_id"], control["env"]) == (exp, env, exp, env)
            assert arm["experiment"] == ledger.row("experiments", exp)["name"]
        by_id = compare(ledger, [f"#{newest}"])  # a run id is never ambiguous; its control is its own experiment's
        assert by_id["control"]["experiment_id"] == b and by_id["arms"][0]["p_adjusted"] is not None


def test_compare_on_the_command_line_names_where_each_arm_came_from(tmp_path):
    home = tmp_path / "home"
    with Ledger(home / "ledger.db") as ledger:
        a = ledger.add_experiment("quickstart", config_hash="h1")
        record(ledger, tmp_path, a, "no_memory", 10)
        record(ledger, tmp_path, a, "closed_loop", 20)
    result = run_cli("compare", "closed_loop", "--json", env={"SKILLOS_HOME": str(home)})
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["arms"][0]["experiment"] == "quickstart" and data["arms"][0]["env"] == "household"
    assert data["arms"][0]["comparison"]["p_adjusted"] == data["arms"][0]["p_adjusted"] is not None
    text = run_cli("compare", "closed_loop", env={"SKILLOS_HOME": str(home)})
    assert "of experiment #1 quickstart, env household" in text.stdout


@pytest.mark.parametrize("b, c, n", [(4, 0, 20), (5, 0, 12), (4, 0, 40), (5, 1, 30), (3, 0, 8)])
def test_a_ci_that_excludes_zero_without_the_exact_test_rejecting_is_noted(b, c, n):
    control = {f"g{i}": i >= b for i in range(n)}
    treatment = {f"g{i}": (i < b) or (i >= b + c) for i in range(n)}
    result = stats.compare(control, treatment, alpha=0.05, power=0.8, n_boot=2000)
    excluded = result.ci_low > 0 or result.ci_high < 0
    noted = "bootstrap CI excludes 0" in result.note
    assert noted is (excluded and result.p_value >= 0.05)
    if noted:
        assert f"b/c = {b}/{c}" in result.note


def test_resuming_a_finished_eval_adds_no_run_and_a_sweep_refuses_the_repo_it_curated(tmp_path):
    home, out = tmp_path / "home", tmp_path / "r"
    env = {"SKILLOS_HOME": str(home)}
    first = run_cli("eval", QUICKSTART, "--n-games", 12, "--n-train-games", 12, "--json", "--out", out, env=env)
    assert first.returncode == 0, first.stderr[-2000:]
    with Ledger(home / "ledger.db") as ledger:
        runs = len(ledger.rows("runs"))
    again = run_cli("eval", QUICKSTART, "--n-games", 12, "--n-train-games", 12, "--json", "--out", out, "--resume",
                    env=env)
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout)["comparisons"] == json.loads(first.stdout)["comparisons"]
    assert "already finished" in again.stderr
    with Ledger(home / "ledger.db") as ledger:
        assert len(ledger.rows("runs")) == runs  # no second copy of the run in any family
    curated = (out / "repo-closed_loop" / ".curated").read_text().split()
    assert len(curated) == 24  # 12 train and 12 held-out problems, curated on as they were played
    sweep = run_cli("sweep", QUICKSTART, "--repo", out / "repo-closed_loop", "--executor", "heuristic",
                    "--n-games", 12, "--n-train-games", 12, "--out", tmp_path / "s", env=env)
    assert sweep.returncode == 2 and "curated on 12 of the 12 held-out games" in sweep.stderr, sweep.stderr[-800:]
    assert "Traceback" not in sweep.stderr and not (tmp_path / "s").exists()
    plan = run_cli("sweep", QUICKSTART, "--repo", out / "repo-closed_loop", "--executor", "heuristic",
                   "--n-games", 12, "--n-train-games", 12, "--dry-run", env=env)
    assert plan.returncode == 2 and "curated on 12 of the 12 held-out games" in plan.stderr  # as the launch


def test_a_repo_from_a_run_without_the_list_is_checked_through_its_run(tmp_path):
    """A repo curated before `.curated` existed: its run's rows and config say which games."""
    from skillos.config import load
    from skillos.evals.sweep import check_not_curated_on, curated_on

    cfg = load(QUICKSTART, sets=["env.n_games=6", "env.n_train_games=6"])
    from skillos.evals.arms import load_games

    held = load_games(cfg, cfg.env.split, 6)
    run = tmp_path / "run"
    (run / "repo-closed_loop").mkdir(parents=True)
    (run / "config.yaml").write_text(json.dumps(cfg.to_dict()))
    (run / "games.jsonl").write_text("".join(json.dumps({"arm": "closed_loop", "game_id": g.id, "success": True})
                                             + "\n" for g in held[:2]))
    hashes, where = curated_on(run / "repo-closed_loop")
    assert hashes == {g.content_hash for g in held[:2]} and "closed_loop" in where
    with pytest.raises(SkillosError, match="curated on 2 of the 6"):
        check_not_curated_on(cfg, [run / "repo-closed_loop"])
    elsewhere = load(QUICKSTART, sets=["env.n_games=6", "env.n_train_games=6", "env.seed=3"])
    check_not_curated_on(elsewhere, [run / "repo-closed_loop"])  # other games: allowed
