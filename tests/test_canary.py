"""Learning canaries (training/canary): the verdicts come from evals/stats.py, a canary passes
only when training improves and its negative control does not, each is recorded with the code
hash it vouches for, and a launch that spends GPUs is refused without a passing one."""

import json

import pytest
import yaml

from conftest import ROOT, run_cli
from skillos import config, gates
from skillos.ledger import Ledger
from skillos.training import canary as canaries

PAPER = ROOT / "training" / "configs" / "skillos-paper-alfworld.yaml"
CPU_SMOKE = ROOT / "training" / "configs" / "cpu-smoke.yaml"
SELECTOR_GPU = ROOT / "training" / "configs" / "selector-gpu-clean-oracle.yaml"


def outcomes(wins: int, n: int = 20, start: int = 0) -> dict:
    return {f"g{i}": start <= i < start + wins for i in range(n)}


def measured(before, after, control) -> canaries.Measured:
    return canaries.Measured("metric", before, after, control)


def result_of(m: canaries.Measured, trainer="curator", code="abc", quick=False) -> dict:
    judged = canaries.judge(m)
    t, c = judged["trained"], judged["control"]
    return {"trainer": trainer, "metric": m.metric, "n": t["comparison"].n_paired,
            "before": t["comparison"].control_rate, "after": t["comparison"].treatment_rate,
            "b": t["comparison"].b, "c": t["comparison"].c, "p": t["comparison"].p_value,
            "verdict": t["verdict"].label,
            "control": {"b": c["comparison"].b, "c": c["comparison"].c, "p": c["comparison"].p_value,
                        "verdict": c["verdict"].label},
            "passed": t["verdict"].word == "improvement" and c["verdict"].word != "improvement",
            "quick": quick, "code_hash": code}


def test_a_canary_passes_only_when_training_improves_and_its_control_does_not():
    before = outcomes(4)
    learned, flat = outcomes(16), outcomes(4)
    ok = result_of(measured(before, learned, flat))
    assert ok["verdict"] == "improvement" and ok["control"]["verdict"].startswith("not detected") and ok["passed"]
    assert (ok["b"], ok["c"], ok["n"]) == (12, 0, 20)
    # the control learned too: the signal was not what moved the number
    assert not result_of(measured(before, learned, learned))["passed"]
    # nothing learned
    assert not result_of(measured(before, flat, flat))["passed"]


def test_unmeasured_tasks_are_dropped_and_counted_never_scored():
    before, after = outcomes(4), outcomes(16)
    before["g19"] = None
    judged = canaries.judge(measured(before, after, outcomes(4)))["trained"]["comparison"]
    assert judged.n_paired == 19 and judged.n_dropped == 1


def test_the_code_hash_changes_with_any_file_the_canary_exercises(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 2\n")
    monkeypatch.setattr(canaries, "PACKAGE_ROOT", tmp_path)
    first = canaries.code_hash(["a.py", "b.py"])
    assert canaries.code_hash(["b.py", "a.py"]) == first
    (tmp_path / "b.py").write_text("y = 3\n")
    assert canaries.code_hash(["a.py", "b.py"]) != first


def test_every_canary_names_files_that_exist():
    for name in canaries.CANARIES:
        chosen = canaries.canary(name)
        assert all((canaries.PACKAGE_ROOT / f).is_file() for f in chosen.files), name
        assert chosen.metric and canaries.code_hash(chosen.files)


def test_the_ledger_keeps_passing_canaries_per_trainer_and_code(skillos_home):
    with Ledger(skillos_home / "ledger.db") as ledger:
        good = result_of(measured(outcomes(4), outcomes(16), outcomes(4)), code="c1")
        run = ledger.start_run(None, None, {})
        ledger.add_canary(run, good)
        assert ledger.passing_canary("curator", "c1")["b"] == 12
        assert ledger.passing_canary("curator", "c2") is None  # the code changed since
        assert ledger.passing_canary("selector:clean-oracle", "c1") is None
        ledger.add_canary(None, {**good, "code_hash": "q", "quick": True})
        assert ledger.passing_canary("curator", "q") is None  # a --quick run vouches for nothing
        ledger.add_canary(None, {**result_of(measured(outcomes(4), outcomes(16), outcomes(16))), "code_hash": "f"})
        assert ledger.passing_canary("curator", "f") is None  # its control learned too
        ledger.correct("runs", run, "invalidate", "the canary ran on a broken checkout")
        assert ledger.passing_canary("curator", "c1") is None


def record_passing(home, trainer: str, name: str) -> None:
    digest = canaries.code_hash(canaries.canary(name).files)
    with Ledger(home / "ledger.db") as ledger:
        ledger.add_canary(None, result_of(measured(outcomes(4), outcomes(16), outcomes(4)), trainer, digest))


def recipe(report):
    return next(r for r in report.results if r.check == "recipe-learns")


def test_a_gpu_launch_is_refused_until_its_trainers_canary_passed(skillos_home):
    cfg = config.load(PAPER)
    refused = recipe(gates.check(cfg))
    assert refused.status == "FAIL" and "skillos canary curator" in refused.detail and refused.gates == (6,)
    record_passing(skillos_home, "selector:clean-oracle", "selector")  # another trainer's canary
    assert recipe(gates.check(cfg)).status == "FAIL"
    record_passing(skillos_home, "curator", "curator")
    passed = recipe(gates.check(cfg))
    assert passed.status == "PASS" and "b/c 12/0" in passed.detail
    assert recipe(gates.check(config.load(CPU_SMOKE))).status == "SKIP"  # the local CPU spends no GPU


def test_the_selector_canary_is_per_credit_variant(skillos_home):
    cfg = config.load(SELECTOR_GPU)
    record_passing(skillos_home, f"selector:{cfg.skillgate.selector_credit}", "selector")
    assert recipe(gates.check(cfg)).status == "PASS"
    other = "first-oracle" if cfg.skillgate.selector_credit != "first-oracle" else "clean-oracle"
    mutated = config.with_sets(cfg, [f"skillgate.selector_credit={other}"])
    assert recipe(gates.check(mutated)).status == "FAIL"


def test_gate_check_cli_names_the_command_to_run(skillos_home):
    result = run_cli("gate", "check", PAPER, "--json")
    assert result.returncode == 1
    failed = [r for r in json.loads(result.stdout)["results"] if r["status"] == "FAIL"]
    assert [r["check"] for r in failed] == ["recipe-learns"] and "skillos canary curator" in failed[0]["detail"]


def test_an_unknown_canary_is_one_line():
    result = run_cli("canary", "curatorr")
    assert result.returncode == 2 and "no such canary" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_the_quick_curator_canary_runs_end_to_end_and_records_itself(tmp_path, game_cache, skillos_home):
    result = run_cli("canary", "curator", "--quick", "--json", "--out", tmp_path / "c")
    assert result.returncode in (0, 1), result.stderr[-3000:]
    data = json.loads(result.stdout)
    assert {"trainer", "metric", "n", "before", "after", "b", "c", "p", "verdict", "control", "code_hash",
            "wall_s"} <= set(data)
    assert {"b", "c", "p", "verdict"} <= set(data["control"]) and data["quick"] is True
    assert data["n"] + data["n_dropped"] == 4  # 8 held-out games: 4 groups of 2
    with Ledger(skillos_home / "ledger.db") as ledger:
        (row,) = ledger.canaries("curator")
        assert row["quick"] == 1 and row["code_hash"] == data["code_hash"]
        assert ledger.passing_canary("curator", data["code_hash"]) is None  # quick vouches for nothing
    assert "reward health" in result.stderr and "policy entropy" in result.stderr


def test_a_profile_without_selection_credit_is_vouched_for_by_the_methods_canary(skillos_home):
    cfg = config.with_sets(config.load(SELECTOR_GPU), ["skillgate.selector_credit=task-mask-only",
                                                        "skillgate.selector_coef=0.0"])
    refused = recipe(gates.check(cfg))
    assert refused.status == "FAIL" and "skillos canary selector --credit clean-oracle" in refused.detail
    record_passing(skillos_home, "selector:clean-oracle", "selector")
    passed = recipe(gates.check(cfg))
    assert passed.status == "PASS" and "task-mask-only gives the selection no credit" in passed.detail
    # a profile with a credit of its own needs its own canary
    hybrid = config.with_sets(config.load(SELECTOR_GPU), ["skillgate.selector_credit=hybrid_slate"])
    assert "skillos canary selector --credit hybrid_slate" in recipe(gates.check(hybrid)).detail


def test_a_credit_the_canary_cannot_check_is_one_line():
    result = run_cli("canary", "selector", "--credit", "task-mask-only")
    assert result.returncode == 2 and "no variant 'task-mask-only'" in result.stderr and "Traceback" not in result.stderr
    result = run_cli("canary", "curator", "--credit", "clean-oracle")
    assert result.returncode == 2 and "it has none" in result.stderr


def test_a_canary_takes_where_it_runs_and_nothing_else(tmp_path, skillos_home):
    """--set takes compute.* keys only: the miniature is fixed (a canary tuned until it passes
    proves nothing); each refusal is one line, before anything is recorded or written."""
    for item, says in (("env.n_games=3", "only compute.* keys"), ("training.max_steps=400", "only compute.* keys"),
                       ("compute.backend=accelerate", "compute.backend local or ray"),
                       ("compute={backend: modal}", "compute.backend local or ray"),
                       ("compute.num_processes=2", "compute.num_processes does nothing for a canary"),
                       ("compute.ray_max_retries=-1", "compute.ray_max_retries: must be between"),
                       ("compute.workers=2", "compute.workers: unknown key")):
        result = run_cli("canary", "optimize", "--quick", "--set", item, "--out", tmp_path / "c")
        assert result.returncode == 2 and says in result.stderr, (item, result.stderr[-2000:])
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "c").exists() and not (skillos_home / "ledger.db").exists()
    assert canaries.compute_sets(["compute.backend=ray", "compute.ray_max_retries=1"]) == [
        "compute.backend=ray", "compute.ray_max_retries=1"]
