"""A SkillsBench-style results registry (issue 62): imported with its trials rebuilt from the
counts (and said so), re-tested per configuration with the per-unit Wilcoxon test and Holm over
the configurations, its mean scores on the source's scale as its authors compute them."""

import json

import pytest

from conftest import run_cli
from skillos.errors import SkillosError
from skillos.evals.skillsbench import rebuild_trials

# Per configuration, each task's two trial rewards under No Skills and With Skills.
BASE = [(0.0, 0.1), (0.2, 0.2), (0.0, 0.5), (0.3, 0.4), (0.5, 0.5), (0.1, 0.2), (0.6, 0.4), (0.0, 0.0)]
UP_A = [0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40]  # every task up, by distinct amounts
UP_B = [0.10, -0.20, 0.30, -0.05, 0.15, 0.0, 0.0, 0.25]  # mixed: W- = 1 + 4 = 5 of n = 6


def shifted(pairs, ups):
    return [(a + d, b + d) for (a, b), d in zip(pairs, ups)]


def record(model, condition, task, rewards):
    score = round(100 * sum(rewards) / len(rewards), 1)
    return {"task": task, "model": model, "modelShort": model.split("-")[0], "harness": "terminus",
            "family": "demo", "condition": condition, "score": score, "trials": len(rewards),
            "passCount": sum(r > 0 for r in rewards), "perfectCount": sum(r == 1 for r in rewards)}


def registry():
    zeros = [(0.0, 0.0)] * 8  # configuration C: nothing moves, every task 0 in both conditions
    arms = {"model-a": (BASE, shifted(BASE, UP_A)), "model-b": (BASE, shifted(BASE, UP_B)), "model-c": (zeros, zeros)}
    out = []
    for model, (control, treated) in arms.items():
        for condition, pairs in (("No Skills", control), ("With Skills", treated)):
            out += [record(model, condition, f"task-{i}", [round(r, 2) for r in pair]) for i, pair in enumerate(pairs)]
    return out


def test_a_registry_is_re_tested_per_configuration_as_its_authors_scored_it(tmp_path, skillos_home):
    src = tmp_path / "results.json"
    src.write_text(json.dumps(registry()))
    env = {"SKILLOS_HOME": str(skillos_home)}
    done = run_cli("import", src, "--experiment", "skillsbench-demo", "--json", env=env)
    assert done.returncode == 0, done.stderr
    runs = json.loads(done.stdout)["runs"]
    assert len(runs) == 6 and {r["condition"] for r in runs} == {"No Skills", "With Skills"}
    assert all("rebuilt from score, passCount and perfectCount" in r["trials"] for r in runs)
    result = run_cli("compare", "--per-configuration", "--family", "skillsbench-demo", "--control", "No Skills",
                     "--json", env=env)
    assert result.returncode == 0, result.stderr
    rows = {r["configuration"]: r for r in json.loads(result.stdout)["configurations"]}
    a, b, c = rows["model-a / terminus"], rows["model-b / terminus"], rows["model-c / terminus"]
    base = sum(x + y for x, y in BASE) / 2 / 8  # the mean reward over tasks: 0.25
    assert a["control_mean_score"] == pytest.approx(100 * base)
    assert a["mean_score"] == pytest.approx(100 * (base + sum(UP_A) / 8)) and a["lift"] == pytest.approx(22.5)
    assert b["lift"] == pytest.approx(100 * sum(UP_B) / 8)  # 6.875
    # exact Wilcoxon by hand: A, 8 of 8 up, p = 2/2^8; B, W- = 5 of n = 6: 10 of 64 patterns have W- <= 5
    assert a["comparison"]["p_value"] == pytest.approx(2 / 256) and b["comparison"]["p_value"] == pytest.approx(20 / 64)
    assert c["comparison"]["p_value"] == 1.0 and c["comparison"]["uninformative"] == 8
    # Holm over the three configurations
    assert a["p_holm"] == pytest.approx(3 * 2 / 256) and b["p_holm"] == pytest.approx(2 * 20 / 64)
    assert a["verdict"]["word"] == "improvement" and b["verdict"]["word"] != "improvement"
    text = run_cli("compare", "--per-configuration", "--family", "skillsbench-demo", "--control", "No Skills",
                   env=env).stdout
    assert "model-a / terminus: No Skills 25.0 -> With Skills 47.5 (+22.5 pts) over 8 paired tasks" in text
    assert "Wilcoxon signed-rank p 0.00781, Holm 0.0234" in text and "mean lift over 3 configuration(s)" in text
    wrong = run_cli("compare", "--per-configuration", "--family", "skillsbench-demo", "--control", "Baseline", env=env)
    assert wrong.returncode != 0 and "no such condition" in wrong.stderr and "Traceback" not in wrong.stderr


def test_trials_are_rebuilt_from_the_counts_and_counts_that_cannot_make_the_score_are_refused():
    assert rebuild_trials(50.0, 2, 1, 1, "r") == [1.0, 0.0]
    assert rebuild_trials(58.3, 3, 2, 1, "r") == pytest.approx([1.0, 0.749, 0.0], abs=1e-3)
    rounded = rebuild_trials(66.7, 3, 2, 2, "r")  # 2 perfect of 3, the score rounded to one decimal
    assert rounded == [1.0, 1.0, 0.0]
    for bad, why in (((70.0, 3, 2, 2), "cannot be|is not"), ((50.0, 2, 1, 2), "do not add up"),
                     ((120.0, 2, 1, 1), r"in \[0, 100\]"), ((50.0, 2.5, 1, 1), "not a count")):
        with pytest.raises(SkillosError, match=why):
            rebuild_trials(*bad, "r")


@pytest.mark.parametrize("data, message", [
    ([], "a results registry with no records"),
    ([{"task": "t", "model": "m", "condition": "No Skills", "score": 50, "trials": 2, "passCount": 1,
       "perfectCount": 1}], "not a registry record (no harness"),
    ([record("a / b", "No Skills", "t1", [1.0]) | {"harness": "c"},
      record("a", "No Skills", "t2", [1.0]) | {"harness": "b / c"}], "both read as configuration 'a / b / c'"),
])
def test_a_registry_that_cannot_be_read_as_one_is_one_line(tmp_path, skillos_home, data, message):
    src = tmp_path / "results.json"
    src.write_text(json.dumps(data))
    done = run_cli("import", src, "--experiment", "bad", env={"SKILLOS_HOME": str(skillos_home)})
    assert done.returncode != 0 and message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_binary_registry_tasks_print_their_ties(tmp_path, skillos_home):
    out = [record("m", condition, f"t{i}", [won]) for condition, wins in
           (("No Skills", [1, 0, 0, 1, 0, 1]), ("With Skills", [1, 1, 1, 0, 0, 1])) for i, won in enumerate(wins)]
    src = tmp_path / "results.json"
    src.write_text(json.dumps(out))
    env = {"SKILLOS_HOME": str(skillos_home)}
    assert run_cli("import", src, "--experiment", "bin", env=env).returncode == 0
    text = run_cli("compare", "--per-configuration", "--family", "bin", "--control", "No Skills", env=env).stdout
    assert "McNemar p 1" in text and "b/c 2/1 (3 tied, 3 uninformative)" in text


def test_an_inspect_sample_played_over_epochs_is_one_unit_with_its_epochs_as_trials(monkeypatch):
    """inspect_ai's epochs replay a sample: they are trials of its unit, never units of their own."""
    from types import SimpleNamespace as NS

    import inspect_ai.log

    from skillos.evals import imported

    def sample(game, epoch, value):
        return NS(id=game, epoch=epoch, metadata={"arm": "treated"}, scores={"s": NS(value=value)})

    log = NS(eval=NS(model="m"), samples=[sample("g1", 1, "C"), sample("g1", 2, "I"), sample("g1", 3, "C"),
                                          sample("g2", 1, "I")])
    monkeypatch.setattr(inspect_ai.log, "read_eval_log", lambda path: log)
    games = imported._inspect_games(__import__("pathlib").Path("log.eval"), imported.Mapping())
    assert games["treated"]["g1"] == {"1": True, "2": False, "3": True} and games["treated"]["g2"] is False
    assert imported.unit_outcome(games["treated"]["g1"]) == (None, [1.0, 0.0, 1.0])
