"""Two more verdict states, decided in evals/stats.py for every report: **attrition** (the arms
left games unmeasured at rates that differ beyond chance: no claim, both rates named) and
**can't tell yet** (the interval holds both a worthwhile gain and as large a loss)."""

import json

import pytest
from conftest import run_cli

from skillos.evals import stats

SETTINGS = dict(alpha=0.05, power=0.8, n_boot=500)


def billing_limit(uneven: bool) -> tuple[dict, dict]:
    """60 games; the control wins the first 20. The treatment wins those and games 20-27; a
    billing limit cut 14 of its later games (the hard ones it would have lost) — or, with
    `uneven` False, 7 games in each arm at the same places."""
    control = {f"g{i:02d}": i < 20 for i in range(60)}
    treatment = {f"g{i:02d}": i < 28 for i in range(60)}
    cut = range(46, 60) if uneven else range(53, 60)
    for i in cut:
        treatment[f"g{i:02d}"] = None
        if not uneven:
            control[f"g{i:02d}"] = None
    return control, treatment


def test_uneven_attrition_takes_the_claim_away_and_names_both_rates():
    control, treatment = billing_limit(uneven=True)
    c = stats.compare(control, treatment, names=("skill", "base"), **SETTINGS)
    assert c.p_value < 0.05  # the naive paired test would call it an improvement
    assert (c.attempted, c.control_unmeasured, c.treatment_unmeasured) == (60, 0, 14)
    assert c.attrition_p == pytest.approx(2 / 2 ** 14)
    v = stats.verdicts({"skill": c}, alpha=0.05, family="f", correction="none")["skill"]
    assert v.word == "attrition"
    assert "skill left 14/60 (23%) games unmeasured, base 0/60 (0%)" in v.line()


def test_even_attrition_is_not_flagged_the_control():
    control, treatment = billing_limit(uneven=False)
    c = stats.compare(control, treatment, **SETTINGS)
    assert (c.control_unmeasured, c.treatment_unmeasured, c.attrition_p) == (7, 7, 1.0)
    assert stats.verdicts({"t": c}, alpha=0.05, family="f", correction="none")["t"].word == "improvement"


def test_cant_tell_yet_when_the_interval_holds_a_worthwhile_gain_and_loss():
    """12 games, +1 game of 12: the CI spans both +/-10 pts; 400 games with the same small
    difference rule out a 10-point gain or loss, so that is not detected, not can't-tell."""
    small = ({f"g{i}": i < 5 for i in range(12)}, {f"g{i}": i < 3 or 5 <= i < 8 for i in range(12)})
    c = stats.compare(*small, **SETTINGS)
    v = stats.verdicts({"t": c}, alpha=0.05, family="f", correction="none", worthwhile=0.10)["t"]
    assert v.word == "can't tell yet" and "a gain and a loss of 10.0 pts (the planned effect)" in v.line()
    big = ({f"g{i}": i < 200 for i in range(400)}, {f"g{i}": i < 190 or 200 <= i < 214 for i in range(400)})
    c = stats.compare(*big, **SETTINGS)
    assert c.ci_high < 0.10 and c.ci_low > -0.10
    assert stats.verdicts({"t": c}, alpha=0.05, family="f", correction="none", worthwhile=0.10)["t"].word == \
        "not detected"


def test_compare_json_carries_attrition_from_an_import(tmp_path, skillos_home):
    control, treatment = billing_limit(uneven=True)
    rows = [{"game_id": g, "arm": "base", "success": s} for g, s in control.items()]
    rows += [{"game_id": g, "arm": "skill", "success": s} for g, s in treatment.items()]
    src = tmp_path / "results.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = {"SKILLOS_HOME": str(skillos_home)}
    assert run_cli("import", src, "--experiment", "billing", env=env).returncode == 0
    done = run_cli("compare", "skill", "--control", "base", "--family", "billing", "--json", env=env)
    assert done.returncode == 0, done.stderr
    arm = json.loads(done.stdout)["arms"][0]
    assert arm["verdict"]["word"] == "attrition" and arm["improvement"] is False
    assert (arm["comparison"]["treatment_unmeasured"], arm["comparison"]["control_unmeasured"]) == (14, 0)
    text = run_cli("compare", "skill", "--control", "base", "--family", "billing", env=env)
    assert "attrition" in text.stdout and "14/60" in text.stdout
