"""skillos optimize's honesty parts: the acceptance gate's modes against hand-computed values,
indecisive on unmeasured tasks, the A/A refusal, the textual learning rate, the rejected-edit
memory across epochs and restarts, and the sealed test split."""

import math

import pytest

from skillos.errors import SkillosError
from skillos.evals import stats
from skillos.training.textopt import optimize
from skillos.training.textopt.optimize import CalibrationFailed, RejectedMemory, SealedSplit
from skillos.training.textopt.textual import StepBudget


# The library takes every setting explicitly (the config owns the defaults); these spell out the
# shipped optimize config's values for the hand-computed cases below.
def gate(incumbent, candidate, mode="paired", k=2.0, max_unmeasured=0.1):
    return stats.accept_candidate(incumbent, candidate, mode, k, max_unmeasured)


def calibrate(first, second, mode="paired", k=2.0, max_unmeasured=0.1):
    return optimize.calibrate(first, second, mode, k, max_unmeasured)


def edits_allowed(step, total, start=4, end=2, schedule="cosine"):
    return optimize.edits_allowed(step, total, start, end, schedule)

BASE = {f"t{i:02d}": i % 2 == 0 for i in range(20)}  # 10 of 20 pass


def changed(**outcomes):
    return {**BASE, **outcomes}


def test_a_copy_never_passes_and_one_flipped_task_passes_only_the_strict_rule():
    assert gate(BASE, dict(BASE)).verdict == "reject"
    assert gate(BASE, dict(BASE), mode="strict").verdict == "reject"
    one = changed(t01=True)
    assert gate(BASE, one, mode="strict").verdict == "accept"  # SkillOpt's > on one score
    paired = gate(BASE, one)
    assert paired.verdict == "reject" and paired.mean_difference == pytest.approx(0.05)


def test_the_method_s_strict_rule_is_the_default_and_the_shipped_configs_say_why_they_choose_paired():
    """SkillOpt and SkillOpt-Sleep accept any higher held-out score: that is what a config that
    sets no gate gets; every shipped config that sets `paired` gives its reason beside it."""
    from conftest import ROOT
    from skillos import config as cfgmod

    default = cfgmod.Config()
    assert default.optimize.gate.mode == default.sleep.gate.mode == "strict"
    assert cfgmod.from_dict({"optimize": {"n_validation": 20}}).optimize.gate.mode == "strict"
    assert "the method's rule" in cfgmod.OptimizeGateConfig.__dataclass_fields__["mode"].metadata["help"]
    shipped = sorted((ROOT / "training" / "configs").glob("*.yaml"))
    chose_paired = [p for p in shipped if "mode: paired" in p.read_text()]
    assert chose_paired
    for path in chose_paired:
        lines = path.read_text().splitlines()
        at = next(i for i, line in enumerate(lines) if "mode: paired" in line)
        assert "not the method's strict" in " ".join(lines[max(0, at - 3):at]), path.name


def test_the_paired_gate_against_hand_computed_values():
    better = changed(t01=True, t03=True, t05=True, t07=True, t09=True)  # five tasks fixed, none broken
    v = gate(BASE, better, k=2.0)
    sd = math.sqrt((5 * 0.75 ** 2 + 15 * 0.25 ** 2) / 19)  # diffs: five 1s, fifteen 0s; mean 0.25
    assert v.mean_difference == pytest.approx(0.25) and v.se == pytest.approx(sd / math.sqrt(20))
    assert v.threshold == pytest.approx(2 * 0.0993399, rel=1e-5) and v.verdict == "accept"
    assert gate(BASE, better, k=3.0).verdict == "reject"  # 0.25 < 3 * 0.0993
    mixed = changed(t01=True, t03=True, t05=True, t07=True, t09=True, t00=False, t02=False)
    assert gate(BASE, mixed).verdict == "reject"  # +5 -2: mean 0.15, 2·SE 0.26


def test_unmeasured_validation_tasks_make_the_verdict_indecisive_not_a_rejection():
    outage = changed(t01=True, t03=True, t05=True, t07=True, t09=True, t10=None, t12=None, t14=None)
    v = gate(BASE, outage, max_unmeasured=0.1)
    assert v.verdict == "indecisive" and v.n_unmeasured == 3 and "3 of 20" in v.reason
    assert gate(BASE, changed(t10=None, t12=None), max_unmeasured=0.1).verdict == "reject"  # 2 of 20: decides
    with pytest.raises(ValueError, match="not one of paired, strict"):
        gate(BASE, BASE, mode="greater")


def test_the_a_a_calibration_refuses_a_gate_that_accepts_noise():
    noisy_copy = changed(t01=True)  # an LLM executor replaying the same skill: one task flipped
    with pytest.raises(CalibrationFailed, match="accepted a copy of the seed skill over itself"):
        calibrate(BASE, noisy_copy, mode="strict")
    assert calibrate(BASE, noisy_copy, mode="paired").verdict == "reject"
    assert calibrate(BASE, dict(BASE)).verdict == "reject"


def test_the_textual_learning_rate_bounds_edits_per_step():
    assert [edits_allowed(s, 5) for s in range(5)] == [4, 4, 3, 2, 2]  # SkillOpt: 4 -> 2, cosine
    assert [edits_allowed(s, 5, schedule="linear") for s in range(5)] == [4, 4, 3, 2, 2]
    assert [edits_allowed(s, 3, 6, 1, "constant") for s in range(3)] == [6, 6, 6]
    assert all(1 <= edits_allowed(s, 100, 4, 0) <= 4 for s in range(100))
    with pytest.raises(SkillosError, match="optimize.schedule"):
        edits_allowed(0, 5, schedule="step")


def test_rejected_edits_persist_across_epochs_and_restarts(tmp_path):
    memory = RejectedMemory(tmp_path / "rejected.json")
    worse = changed(t00=False, t01=True)
    memory.add("replace '## Search' with 'look in the fridge first'", gate(BASE, worse), BASE, worse, 0, 3)
    memory.add("delete '## Pitfalls'", gate(BASE, BASE), BASE, dict(BASE), 1, 0)  # a later epoch keeps both
    again = RejectedMemory(tmp_path / "rejected.json")  # a resumed run
    assert [(r.epoch, r.broke, r.fixed) for r in again.items] == [(0, ["t00"], ["t01"]), (1, [], [])]
    text = again.steering()
    assert "Rejected edits so far (2" in text and "broke 1: t00 | fixed 1: t01" in text
    assert RejectedMemory().steering() == "No edit has been rejected yet."


def test_the_sealed_split_is_read_once_even_across_restarts(tmp_path):
    split = SealedSplit(["g1", "g2"], tmp_path / "run" / "test.sealed")
    assert split.sealed and split.read("final report") == ["g1", "g2"] and not split.sealed
    with pytest.raises(SkillosError, match=r"already read \(final report\)"):
        split.read("peek")
    with pytest.raises(SkillosError, match="already read"):
        SealedSplit(["g1", "g2"], tmp_path / "run" / "test.sealed").read("resumed run")


def test_a_model_optimizer_sees_the_rejected_edits_and_is_held_to_the_budget(monkeypatch):
    """The LLM proposer over the real openai SDK: the prompt carries the current skills, the
    trajectories, the rejected-edit steering and the step's budget of changed lines; the
    step's budget then admits what fits and refuses the rest, counted with a reason."""
    import json as _json

    from llm_server import ScriptedLLM

    from skillos.config import BackendConfig
    from skillos.evals.trajectory import Step, Trajectory
    from skillos.repo import SkillRepo
    from skillos.training.textopt.optimize import make_proposer

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    memory = RejectedMemory()
    memory.add("add where-to-find-mug (5 lines)", gate(BASE, changed(t00=False)), BASE, changed(t00=False), 0, 1)
    inserts = [{"name": "new_skill_insert", "arguments": {"skill_name": f"tip-{i}", "content": f"Tip {i}\nDo {i}."}}
               for i in range(3)]
    incumbent = SkillRepo(None)
    incumbent.insert("search-order", "Where to look first", "Countertops, then cabinets.")
    traj = Trajectory("g1", "put a mug in the fridge", "pick_and_place_simple",
                      steps=[Step("go to fridge 1", "The fridge 1 is closed.")], won=False, retrieved=[])
    with ScriptedLLM(lambda m: {"tool_calls": inserts}) as server:
        proposer = make_proposer(BackendConfig(backend="openai", model="m", base_url=server.openai_url), "repo")
        proposer.meta_skill = "# Editing skills\n- Edit what the textual gradient names."  # the run sets it
        edits = proposer.propose(incumbent, [traj], memory, budget=12)
        prompt = _json.dumps(server.calls[0]["body"]["messages"])
    budget = StepBudget(12)
    kept = budget.admit(edits, incumbent)
    assert [e.summary() for e in kept] == ["add tip-0 (6 lines)", "add tip-1 (6 lines)"]  # 3 proposed, 12 lines
    assert budget.used == 12 and [r.reason for r in budget.refusals] == [
        "6 changed lines exceed the 0 left of this step's budget of 12"]
    assert "at most 12 lines of skill text" in prompt and "Countertops, then cabinets." in prompt
    assert "broke 1: t00" in prompt and "put a mug in the fridge" in prompt
    assert "The meta skill (how to edit skills):" in prompt and "Edit what the textual gradient names." in prompt
