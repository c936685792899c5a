"""One place decides a claim: `stats.verdicts`. The same numbers get the same verdict words in the
eval report (quickstart), sweep, compare, verify-fix and optimize; "not detected (below the MDE)"
is never "no effect"; the family and its size are printed beside every adjusted p."""

import hashlib
import json

import pytest

from skillos import config
from skillos.evals import report, stats, sweep
from skillos.evals.compare import compare_runs
from skillos.evals.verify import verify_fix
from skillos.ledger import Ledger
from skillos.training.textopt import candidates

N = 40
CFG = config.validate(config.Config())
SETTINGS = dict(alpha=CFG.eval.alpha, power=CFG.eval.power)


def outcomes(wins, n=N, unmeasured=False):
    return {f"g{i:02d}": None if unmeasured else i < wins for i in range(n)}


# control wins, treatment wins (or None: all unmeasured) -> word, label
CASES = [
    (10, 30, "improvement", "improvement"),
    (30, 10, "regression", "regression"),
    (10, 11, "not detected", "not detected (below the MDE)"),
    (10, 10, "not detected", "not detected"),  # no discordant pair: the MDE cannot be estimated
    (10, None, "not reportable", "not reportable"),
]


@pytest.mark.parametrize("control, treatment, word, label", CASES)
def test_the_verdict_function(control, treatment, word, label):
    a = outcomes(control)
    b = outcomes(treatment or 0, unmeasured=treatment is None)
    c = stats.compare(a, b, names=("t", "c"), **SETTINGS, n_boot=200)
    (v,) = stats.verdicts({"t": c}, alpha=CFG.eval.alpha, family="table", correction="holm").values()
    assert (v.word, v.label) == (word, label) and v.word in stats.VERDICT_WORDS
    assert v.reasons and "no effect" not in v.line().replace("not evidence of no effect", "")
    if v.p_adjusted is not None:
        assert "over a family of 1 (table)" in v.line()


def test_family_size_and_repeats_do_not_shrink_it():
    """A member judged elsewhere (family_size) counts; three identical reruns adjust each other."""
    c = stats.compare(outcomes(10), outcomes(16), names=("t", "c"), **SETTINGS, n_boot=200)  # p = 0.031
    alone = stats.verdicts({"t": c}, alpha=0.05, family="f", correction="holm")["t"]
    reruns = stats.verdicts({i: c for i in range(3)}, alpha=0.05, family="f", correction="holm")
    padded = stats.verdicts({"t": c}, alpha=0.05, family="f", correction="bonferroni", family_size=3)["t"]
    assert alone.word == "improvement" and alone.family_size == 1
    assert {v.word for v in reruns.values()} == {"not detected"} and reruns[0].family_size == 3
    assert padded.p_adjusted == pytest.approx(min(1, 3 * c.p_value)) and "family of 3" in padded.line()
    stale = stats.verdicts({"t": c}, alpha=0.05, family="f", correction="holm",
                           problems={"t": ["control run #1 is 9.0 days old"]})["t"]
    assert stale.word == "not reportable" and stale.reasons[0] == "control run #1 is 9.0 days old"


def eval_rows(arm, wins):
    return [{"arm": arm, "phase": "eval", "game_id": g, "task_type": "pick", "success": s,
             "steps": 3, "coerced_actions": 0, "repo_size": 0, "unmeasured": s is None,
             "unmeasured_reason": "outage" if s is None else None} for g, s in wins.items()]


def record(ledger, tmp_path, exp, arm, wins):
    run = ledger.start_run(exp, arm, {}, 0, "executor=heuristic")
    path = tmp_path / f"{arm}-{run}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in eval_rows(arm, wins)))
    ledger.add_eval(run, arm, report.arm_summary(eval_rows(arm, wins)), str(path),
                    hashlib.sha256(path.read_bytes()).hexdigest())
    ledger.end_run(run)
    return run


@pytest.mark.parametrize("control, treatment, word, label", CASES)
def test_every_report_says_the_same_words_for_the_same_numbers(control, treatment, word, label, tmp_path):
    a, b = outcomes(control), outcomes(treatment or 0, unmeasured=treatment is None)
    seen = {}
    # the eval report (quickstart, eval) and the sweep built on it
    cfg = config.from_dict({"eval": {"arms": ["no_memory", "repo:x"], "static_repos": {"x": "x"},
                                     "bootstrap": 200}})
    built = report.build(cfg, {"no_memory": eval_rows("no_memory", a), "repo:x": eval_rows("repo:x", b)},
                         tmp_path, n_train=0)
    seen["report"] = built["comparisons"][0]["verdict"]
    seen["sweep"] = sweep.summarize(built)["rows"][0]["verdict"]
    with Ledger(tmp_path / "ledger.db") as ledger:  # compare and verify-fix, from the ledger
        exp = ledger.add_experiment("e")
        before = record(ledger, tmp_path, exp, "no_memory", a)
        failure = ledger.add_failure("x", "harness-bug")
        fix = ledger.add_fix(failure, "y", "success_rate", "up", None, before)
        after = record(ledger, tmp_path, exp, "closed_loop", b)  # begun after the fix: it may verify it
        (arm,) = compare_runs(ledger, [after], before, **SETTINGS, max_age_days=7.0, n_boot=200)["arms"]
        seen["compare"] = arm["verdict"]
        if treatment is not None:  # verify-fix refuses a comparison with nothing measured
            seen["verify-fix"] = verify_fix(ledger, fix, after, **SETTINGS, n_boot=200)["verdict"]
    comp = stats.compare(a, b, names=("best", "seed"), **SETTINGS, n_boot=200)
    aa = stats.accept_candidate(a, a, "paired", 2.0, 0.1)
    seen["optimize"] = candidates.sealed_report(cfg, comp, 1, 1, aa, {}, {}, 0, tmp_path, "paired")["decision"]
    assert {name: (v["word"], v["label"]) for name, v in seen.items()} == {name: (word, label) for name in seen}
    assert len({v["line"].split(":")[0] for v in seen.values()}) == 1


def test_the_configs_control_age_takes_effect_in_compare(tmp_path):
    """eval.control.max_age_days is read by skillos.compare (it changed nothing before)."""
    import time

    import skillos

    with Ledger(tmp_path / "ledger.db") as ledger:
        exp = ledger.add_experiment("e")
        control = record(ledger, tmp_path, exp, "no_memory", outcomes(10))
        arm = record(ledger, tmp_path, exp, "closed_loop", outcomes(30))
        time.sleep(1.1)  # started_at has one-second resolution
        fresh = skillos.compare(CFG, [f"#{arm}"], control=f"#{control}", ledger=ledger)["arms"][0]
        strict = config.with_sets(CFG, ["eval.control.max_age_days=0.00001"])
        stale = skillos.compare(strict, [f"#{arm}"], control=f"#{control}", ledger=ledger)["arms"][0]
    assert fresh["verdict"]["word"] == "improvement"
    assert stale["verdict"]["word"] == "not reportable" and "days old (> 1e-05)" in stale["verdict"]["line"]


def test_an_mde_above_100_points_says_this_n_detects_nothing():
    """Two paired games cannot show any difference: the verdict says so instead of 'below the
    MDE of 140.1 pts'."""
    from skillos.evals import stats

    before = {"g0": False, "g1": False}
    after = {"g0": True, "g1": False}
    c = stats.compare(before, after, names=("a", "b"), alpha=0.05, power=0.8, n_boot=200)
    assert c.mde is not None and c.mde > 1
    verdict = stats.verdicts({"a": c}, alpha=0.05, family="f", correction="none")["a"]
    assert verdict.word == "not detected" and "this n can detect no difference at all" in verdict.line()
    assert "MDE of" not in verdict.line()
