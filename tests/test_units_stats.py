"""Outcomes beyond one binary trial (issue 62): units with several trials and scores in [0, 1],
paired by unit, trials averaged within it, the Wilcoxon signed-rank and the exact sign test over
the per-unit differences, checked against numbers worked out by hand."""

import math

import pytest

from skillos.evals import stats

ARGS = dict(alpha=0.05, power=0.8, n_boot=2000)

# Seven units of three trials (docs/units.md's worked example):
#   unit  control          treatment        means          difference
#   u1    0, 0, 0          1, 1, 1          0    -> 1      +1
#   u2    0, 0, 1          1, 1, 1          1/3  -> 1      +2/3
#   u3    .5, .5, .5       .5, 1, 1         1/2  -> 5/6    +1/3
#   u4    1, 1, 1          1, 1, 1          1    -> 1       0   (uninformative: all 1)
#   u5    0, 0, 0          0, 0, 0          0    -> 0       0   (uninformative: all 0)
#   u6    1, 1, .5         1, 1, 1          5/6  -> 1      +1/6
#   u7    .2, null, .4     .3, .1, .2       .3   -> .2     -.1
CONTROL = {"u1": [0, 0, 0], "u2": [0, 0, 1], "u3": [.5, .5, .5], "u4": [1, 1, 1], "u5": [0, 0, 0],
           "u6": [1, 1, .5], "u7": [.2, None, .4]}
TREATMENT = {"u7": [.3, .1, .2], "u6": [1, 1, 1], "u5": [0, 0, 0], "u4": [1, 1, 1], "u3": [.5, 1, 1],
             "u2": [1, 1, 1], "u1": [1, 1, 1]}


def test_trials_are_averaged_within_a_unit_and_the_differences_tested_as_worked_by_hand():
    c = stats.compare_units(CONTROL, TREATMENT, **ARGS)
    assert c.test == "wilcoxon" and "several trials" in c.test_reason
    diffs = [1, 2 / 3, 1 / 3, 0, 0, 1 / 6, -0.1]
    assert c.n_paired == 7 and c.n_dropped == 0
    assert (c.b, c.c, c.ties) == (4, 1, 2)  # u1, u2, u3, u6 up; u7 down; u4, u5 tied
    assert c.uninformative == 2 and c.uninformative_units == ["u4", "u5"]
    assert c.difference == pytest.approx(sum(diffs) / 7)  # 0.29524
    assert c.control_rate == pytest.approx((0 + 1 / 3 + .5 + 1 + 0 + 5 / 6 + .3) / 7)
    # Wilcoxon: |d| ranks 0.1 -> 1, 1/6 -> 2, 1/3 -> 3, 2/3 -> 4, 1 -> 5; W- = 1; exact two-sided
    # p = 2 * P(W- <= 1) = 2 * 2/32 = 0.125
    assert c.wilcoxon_p == pytest.approx(0.125) and c.p_value == c.wilcoxon_p
    # sign test: 4 up, 1 down of 5 moved: 2 * (1 + 5) / 32 = 0.375
    assert c.sign_p == pytest.approx(0.375)
    assert c.n_trials == {"control": 21, "treatment": 21}
    assert c.trials_unmeasured == {"control": 1, "treatment": 0}
    sd = math.sqrt(sum((d - sum(diffs) / 7) ** 2 for d in diffs) / 6)
    z = 1.959964 + 0.841621
    assert c.mde == pytest.approx(z * sd / math.sqrt(7), rel=1e-4)
    assert c.ci_low < c.difference < c.ci_high and not c.significant


def test_units_pair_by_id_whatever_the_order_and_a_unit_unmeasured_in_one_arm_drops():
    shuffled = {u: list(reversed(v)) for u, v in reversed(list(TREATMENT.items()))}
    assert stats.compare_units(CONTROL, shuffled, **ARGS).wilcoxon_p == pytest.approx(0.125)
    lost = {**TREATMENT, "u8": [None, None]}
    c = stats.compare_units({**CONTROL, "u8": [1, 0]}, lost, **ARGS)
    assert c.n_paired == 7 and c.n_dropped == 1 and c.trials_unmeasured["treatment"] == 2


def test_binary_single_trials_keep_the_exact_mcnemar_test():
    control = {f"g{i}": bool(i % 2) for i in range(20)}
    treatment = {f"g{i}": True for i in range(20)}
    units = stats.compare_units(control, {g: [v] for g, v in treatment.items()}, **ARGS)
    plain = stats.compare(control, treatment, **ARGS)
    assert units.test == "mcnemar" and "McNemar" in units.test_reason
    assert (units.b, units.c, units.p_value) == (plain.b, plain.c, plain.p_value) == (10, 0, plain.p_value)


def test_a_score_outside_zero_one_is_refused_and_a_verdict_reads_the_unit_test():
    with pytest.raises(ValueError, match=r"not a score in \[0, 1\]"):
        stats.compare_units({"u": [1.5]}, {"u": [1]}, **ARGS)
    strong = {f"u{i}": [0.1 * (i % 3), 0.2] for i in range(30)}
    better = {f"u{i}": [0.9, 0.8 + 0.01 * i / 30] for i in range(30)}
    comparison = stats.compare_units(strong, better, **ARGS)
    verdict = stats.verdicts({"x": comparison}, alpha=0.05, family="f", correction="none")["x"]
    assert comparison.test == "wilcoxon" and comparison.p_value < 1e-5 and verdict.word == "improvement"


def test_trials_and_partial_credit_imported_from_jsonl_are_compared_by_unit(tmp_path, skillos_home):
    """The worked example as another tool would write it: one row per (task, condition, trial),
    rewards in [0, 1], the trials listed out of order; `import --trial-col` keeps every trial and
    `compare` pairs by task and prints the unit test, its reason and its denominators."""
    import json

    from conftest import run_cli

    rows = []
    for condition, units in (("no-skills", CONTROL), ("with-skills", TREATMENT)):
        for unit, trials in units.items():
            for trial in (2, 0, 1):  # a source need not keep the trials' order
                rows.append({"task": unit, "condition": condition, "trial": trial, "reward": trials[trial]})
    src = tmp_path / "results.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = {"SKILLOS_HOME": str(skillos_home)}
    done = run_cli("import", src, "--experiment", "bench", "--game-col", "task", "--arm-col", "condition",
                   "--success-col", "reward", "--trial-col", "trial", env=env)
    assert done.returncode == 0, done.stderr
    assert "with-skills: mean score 0.719 over 7 measured units (21 trials, 0 unmeasured)"  # 5.033 / 7 in done.stdout
    compared = run_cli("compare", "with-skills", "--control", "no-skills", "--family", "bench", "--json", env=env)
    assert compared.returncode == 0, compared.stderr
    arm = json.loads(compared.stdout)["arms"][0]
    k = arm["comparison"]
    assert k["test"] == "wilcoxon" and k["p_value"] == pytest.approx(0.125) and k["sign_p"] == pytest.approx(0.375)
    assert (k["b"], k["c"], k["ties"], k["uninformative"]) == (4, 1, 2, 2)
    assert k["n_trials"] == {"control": 21, "treatment": 21} and k["trials_unmeasured"] == {"control": 1, "treatment": 0}
    assert arm["denominators"]["mean_score"] == pytest.approx(sum(sum(v) / 3 for v in TREATMENT.values()) / 7)
    assert arm["denominators"]["successes"] is None  # a score is not a count of wins
    text = run_cli("compare", "with-skills", "--control", "no-skills", "--family", "bench", env=env).stdout
    assert "Wilcoxon signed-rank p 0.125" in text and "2 uninformative unit(s)" in text and "u4, u5" in text
    twice = tmp_path / "twice.jsonl"
    twice.write_text(json.dumps({"task": "u1", "condition": "a", "reward": 1}) + "\n"
                     + json.dumps({"task": "u1", "condition": "a", "reward": 0.5}) + "\n")
    refused = run_cli("import", twice, "--experiment", "b2", "--game-col", "task", "--arm-col", "condition",
                      "--success-col", "reward", env=env)
    assert refused.returncode != 0 and "appears twice" in refused.stderr and "--trial-col" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_an_import_applies_the_error_budget_names_errored_units_and_reads_them_as_failures_beside(
        tmp_path, skillos_home):
    import json

    from conftest import run_cli

    def rows(errored: int):
        """100 games: the treatment alone wins g0-g8 (b = 9), the control alone g9 (c = 1); the
        control also wins the `errored` games after it, where the treatment has no outcome."""
        out = []
        for i in range(100):
            base, treated = (False, True) if i < 9 else (True, False) if i == 9 else \
                (True, None) if i < 10 + errored else (False, False)
            out += [{"game_id": f"g{i}", "arm": "base", "success": base},
                    {"game_id": f"g{i}", "arm": "treated", "success": treated}]
        return out

    env = {"SKILLOS_HOME": str(skillos_home)}
    for name, errored in (("two-lost", 2), ("three-lost", 3)):
        src = tmp_path / f"{name}.jsonl"
        src.write_text("".join(json.dumps(r) + "\n" for r in rows(errored)))
        assert run_cli("import", src, "--experiment", name, env=env).returncode == 0
    compared = lambda family, *flags: run_cli("compare", "treated", "--control", "base", "--family", family,  # noqa: E731
                                              *flags, env=env).stdout
    # 3 of 100 unmeasured is above eval.max_error_rate 0.02: not reportable, as a skillos arm would have aborted
    over = json.loads(compared("three-lost", "--json"))["arms"][0]
    assert over["verdict"]["word"] == "not reportable"
    assert any("left 3 of 100 common units unmeasured, above eval.max_error_rate 0.02" in why
               for why in over["verdict"]["reasons"])
    # 2 of 100 is within it: measured, b/c 9/1, exact McNemar p = 2 * 11 / 2^10 = 0.0215, an improvement;
    # read as failures, b/c 9/3, p = 2 * 299 / 2^12 = 0.146: the verdict changes, and compare says so
    arm = json.loads(compared("two-lost", "--json"))["arms"][0]
    assert arm["verdict"]["word"] == "improvement" and arm["comparison"]["p_value"] == pytest.approx(22 / 1024)
    other = arm["unmeasured_as_failures"]
    assert other["changes_the_verdict"] is True and other["verdict"]["p_value"] == pytest.approx(598 / 4096)
    assert "with every unmeasured unit or trial counted as a failure: not detected" in compared("two-lost")
    clean = tmp_path / "clean.jsonl"
    clean.write_text("".join(json.dumps({**r, "success": bool(r["success"])}) + "\n" for r in rows(2)))
    assert run_cli("import", clean, "--experiment", "clean", env=env).returncode == 0
    assert json.loads(compared("clean", "--json"))["arms"][0]["unmeasured_as_failures"] is None


def test_an_eval_whose_every_run_errored_is_named_errored_not_no_outcome(tmp_path, skillos_home):
    import json

    from conftest import run_cli
    from skillos.evals.verify import run_rows
    from skillos.ledger import Ledger

    def run(config, eval_id, errors):
        return {"eval_id": eval_id, "configuration": config, "run_number": 1, "expectations": [],
                "result": {"pass_rate": None if errors else 1.0, "passed": 0 if errors else 2, "total": 2,
                           "errors": errors}}

    data = {"runs": [run("with_skill", 1, 3), run("with_skill", 2, 0), run("without_skill", 1, 0),
                     run("without_skill", 2, 0)]}
    src = tmp_path / "benchmark.json"
    src.write_text(json.dumps(data))
    env = {"SKILLOS_HOME": str(skillos_home)}
    assert run_cli("import", src, "--experiment", "creator", env=env).returncode == 0
    with Ledger(skillos_home / "ledger.db") as ledger:
        run_id = next(r["id"] for r in ledger.rows("runs") if r["arm_id"] is not None and
                      ledger.run(r["id"])["arm"] == "with_skill")
        rows = run_rows(ledger, run_id)
    assert rows["eval-1"]["unmeasured"] and rows["eval-1"]["unmeasured_reason"] == "errored (result.errors 3)"
    assert not rows["eval-2"]["unmeasured"]


def test_four_units_that_moved_alike_are_not_an_improvement_the_exact_test_counts_tied_ranks():
    c = stats.compare_units({u: [0, 0, 0] for u in "abcd"}, {u: [1, 1, 1] for u in "abcd"}, **ARGS)
    assert c.p_value == pytest.approx(0.125) == c.sign_p and not c.significant  # 2 of 2^4 patterns
    noise = stats.compare_units({"a": [.1, .2, .3]}, {"a": [.2]}, **ARGS)  # 0.2 vs 0.2 in floating point
    assert (noise.b, noise.c, noise.ties) == (0, 0, 1)


@pytest.mark.parametrize("labels, message", [
    (["--1", "2"], None), (["\u00b2", "1"], None), ([1, 1.0], "trial '1' of game 'g' appears twice")])
def test_trial_labels_of_any_spelling_are_read_or_refused_in_one_line(tmp_path, skillos_home, labels, message):
    import json

    from conftest import run_cli

    rows = [{"game_id": "g", "arm": arm, "trial": t, "success": 1} for arm in ("a", "b") for t in labels]
    src = tmp_path / "t.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = run_cli("import", src, "--experiment", "labels", "--trial-col", "trial",
                   env={"SKILLOS_HOME": str(skillos_home)})
    assert "Traceback" not in done.stderr
    if message is None:
        assert done.returncode == 0, done.stderr
    else:
        assert done.returncode != 0 and message in done.stderr
        assert not (skillos_home / "imports").exists() or not any((skillos_home / "imports").rglob("*.jsonl"))


def test_the_unmeasured_as_failures_reading_is_judged_in_the_same_family_with_the_same_problems(
        tmp_path, skillos_home):
    import json

    from conftest import run_cli

    # arm A: b/c 10/2 with one unmeasured game that the control lost (reading it as a failure moves
    # nothing); arm B in the same family: b/c 8/0. Both measured against the same control.
    rows = [{"game_id": f"g{i}", "arm": "base", "success": i in (10, 11)} for i in range(30)]
    rows += [{"game_id": f"g{i}", "arm": "A", "success": None if i == 29 else (i < 10 or i > 11 and False)}
             for i in range(30)]
    rows += [{"game_id": f"g{i}", "arm": "B", "success": i < 8 or i in (10, 11)} for i in range(30)]
    src = tmp_path / "r.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = {"SKILLOS_HOME": str(skillos_home)}
    assert run_cli("import", src, "--experiment", "fam", env=env).returncode == 0
    arm = json.loads(run_cli("compare", "A", "--control", "base", "--family", "fam", "--json", env=env).stdout)["arms"][0]
    assert (arm["comparison"]["b"], arm["comparison"]["c"]) == (10, 2)
    other = arm["unmeasured_as_failures"]
    assert other["verdict"]["p_adjusted"] == pytest.approx(arm["verdict"]["p_adjusted"])  # the same family
    assert other["changes_the_verdict"] is False
