"""`skillos compare`: a difference is called an improvement only against a fresh control on the
same executor, with equal denominators, significant after Holm over the ledger's family."""

import datetime as dt
import hashlib
import json

import pytest

from conftest import run_cli
from skillos.evals.compare import compare_runs
from skillos.ledger import Ledger

SETTINGS = dict(alpha=0.05, power=0.8, max_age_days=7.0)  # the schema's defaults, spelled out

SAME = "executor=heuristic model=None"


def record(ledger, tmp_path, exp, arm, outcomes, fingerprint=SAME):
    run = ledger.start_run(exp, arm, {}, 0, fingerprint)
    path = tmp_path / f"{arm}-{run}.jsonl"
    rows = [{"arm": arm, "phase": "eval", "game_id": g, "success": s, "coerced_actions": 0}
            for g, s in outcomes.items()]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = {"attempted": len(rows), "measured": sum(s is not None for s in outcomes.values()),
               "unmeasured": sum(s is None for s in outcomes.values()),
               "successes": sum(bool(s) for s in outcomes.values()), "coerced_actions": 0, "actions": 0}
    ledger.add_eval(run, arm, summary, str(path), hashlib.sha256(path.read_bytes()).hexdigest())
    ledger.end_run(run)
    return run


def games(wins, n=40):
    return {f"g{i:02d}": i < wins for i in range(n)}


@pytest.fixture
def ledger(skillos_home):
    with Ledger(skillos_home / "ledger.db") as ledger:
        yield ledger


def test_a_real_improvement_is_called_one(ledger, tmp_path):
    exp = ledger.add_experiment("e")
    control = record(ledger, tmp_path, exp, "no_memory", games(10))
    arm = record(ledger, tmp_path, exp, "closed_loop", games(30))
    (result,) = compare_runs(ledger, [arm], control, **SETTINGS, n_boot=1000)["arms"]
    assert result["improvement"] and result["why_not"] == []
    assert result["comparison"]["b"] == 20 and result["comparison"]["mde"] > 0
    assert result["denominators"] == {"games_recorded": 40, "attempted": 40, "measured": 40,
                                      "unmeasured": 0, "successes": 30, "coerced_actions": 0}


def test_a_stale_or_foreign_control_is_refused(ledger, tmp_path):
    exp = ledger.add_experiment("e")
    control = record(ledger, tmp_path, exp, "no_memory", games(10))
    arm = record(ledger, tmp_path, exp, "closed_loop", games(30))
    later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=70)  # a ten-week-old baseline
    (result,) = compare_runs(ledger, [arm], control, now=later, **SETTINGS, n_boot=1000)["arms"]
    assert not result["improvement"] and "measure a fresh one" in result["why_not"][0]
    other = record(ledger, tmp_path, exp, "static_repo", games(30), fingerprint="executor=openai")
    (result,) = compare_runs(ledger, [other], control, **SETTINGS, n_boot=1000)["arms"]
    assert not result["improvement"] and "used executor" in result["why_not"][0]


def test_unequal_denominators_are_refused(ledger, tmp_path):
    exp = ledger.add_experiment("e")
    control = record(ledger, tmp_path, exp, "no_memory", games(10))
    arm = record(ledger, tmp_path, exp, "closed_loop", games(30, n=36))
    (result,) = compare_runs(ledger, [arm], control, **SETTINGS, n_boot=1000)["arms"]
    assert not result["improvement"] and "denominators differ" in " ".join(result["why_not"])


def test_the_family_comes_from_the_ledger(ledger, tmp_path):
    exp = ledger.add_experiment("e")
    control = record(ledger, tmp_path, exp, "no_memory", games(10))
    # 9 games won only by the arm, 1 only by the control: exact McNemar p = 0.021
    arm = {f"g{i:02d}": (i < 19 and i != 0) for i in range(40)}
    target = record(ledger, tmp_path, exp, "closed_loop", arm)
    record(ledger, tmp_path, exp, "shuffled", games(10))
    record(ledger, tmp_path, exp, "static_repo", games(11))
    out = compare_runs(ledger, [target], control, **SETTINGS, n_boot=1000)
    (result,) = out["arms"]
    assert out["family"]["size"] == 3  # comparing one arm at a time does not shrink it
    assert result["comparison"]["p_value"] == pytest.approx(0.0215, abs=1e-3)
    assert result["comparison"]["p_holm"] == pytest.approx(3 * 0.0215, abs=3e-3)
    assert not result["improvement"] and result["verdict"]["word"] == "not detected"
    assert "Holm over a family of 3" in result["verdict"]["line"]  # the family and its size, beside the p


def test_unmeasured_games_drop_from_pairs_not_count_as_losses(ledger, tmp_path):
    exp = ledger.add_experiment("e")
    control = record(ledger, tmp_path, exp, "no_memory", games(10))
    outage = {g: (None if i >= 20 else s) for i, (g, s) in enumerate(games(30).items())}
    arm = record(ledger, tmp_path, exp, "closed_loop", outage)
    (result,) = compare_runs(ledger, [arm], control, **SETTINGS, n_boot=1000)["arms"]
    assert result["comparison"]["n_paired"] == 20 and result["comparison"]["n_dropped"] == 20
    assert result["denominators"]["unmeasured"] == 20


def test_compare_cli_prints_denominators_and_the_mde(ledger, tmp_path):
    exp = ledger.add_experiment("e")
    control = record(ledger, tmp_path, exp, "no_memory", games(10))
    arm = record(ledger, tmp_path, exp, "closed_loop", games(30))
    result = run_cli("compare", f"#{arm}", "--control", f"#{control}")
    assert result.returncode == 0, result.stderr
    assert "10/40 measured of 40 common games" in result.stdout and "MDE" in result.stdout
    assert "verdict: improvement" in result.stdout
    result = run_cli("compare", f"#{arm}", "--control", "#999")
    assert result.returncode == 2 and "999" in result.stderr and "Traceback" not in result.stderr
    # a bare number is an arm's name, never a run id: no arm is named 999
    bare = run_cli("compare", f"#{arm}", "--control", "999")
    assert bare.returncode == 2 and "no measured run of arm '999'" in bare.stderr and "written #999" in bare.stderr


def test_an_arm_named_like_a_number_is_that_arm_not_a_run_id(ledger, tmp_path):
    exp = ledger.add_experiment("e")
    other = ledger.add_experiment("other")
    decoy = record(ledger, tmp_path, other, "no_memory", games(5))  # run #1 of another experiment
    control = record(ledger, tmp_path, exp, "no_memory", games(10))
    named = record(ledger, tmp_path, exp, str(decoy), games(30))  # an imported arm named "1"
    (result,) = compare_runs(ledger, [str(decoy)], "no_memory", experiment=str(exp), **SETTINGS, n_boot=500)["arms"]
    assert result["run_id"] == named and result["run_id"] != decoy


def test_arms_by_name_and_a_named_family(ledger, tmp_path):
    first = ledger.add_experiment("sweep")  # the same family, two configs
    second = ledger.add_experiment("sweep")
    record(ledger, tmp_path, first, "no_memory", games(10))
    record(ledger, tmp_path, first, "static_repo", games(12))
    control = record(ledger, tmp_path, second, "no_memory", games(10))
    arm = record(ledger, tmp_path, second, "closed_loop", games(30))
    out = compare_runs(ledger, ["closed_loop"], "no_memory", **SETTINGS, n_boot=500)
    assert out["control"]["run_id"] == control and out["arms"][0]["run_id"] == arm
    assert out["family"]["size"] == 1  # the compared run's own experiment
    named = compare_runs(ledger, ["closed_loop"], "no_memory", family="sweep", **SETTINGS, n_boot=500)
    assert named["family"]["size"] == 2 and named["family"]["name"] == "sweep"
    result = run_cli("compare", "closed_loop", "--family", "sweep")
    assert result.returncode == 0 and "family sweep: 2 run(s)" in result.stdout
    missing = run_cli("compare", "shuffled")
    assert missing.returncode == 2 and "no measured run of arm 'shuffled'" in missing.stderr


def test_compare_says_why_its_holm_p_can_differ_from_a_runs_report():
    from skillos.cli_render import compare_lines
    from skillos.evals.compare import FAMILY_NOTE

    result = {"control": {"run_id": 1, "arm": "base", "age_days": 0.0, "denominators": {
        "successes": 1, "measured": 2, "attempted": 2, "unmeasured": 0, "coerced_actions": 0}},
        "max_age_days": 7, "alpha": 0.05, "arms": [],
        "family": {"name": "f", "size": 3, "runs": [1, 2, 3], "note": FAMILY_NOTE}}
    line = compare_lines(result)[1]
    assert "a run's own report.json corrects over the comparisons of that run" in line and "the raw p is the same" in line
