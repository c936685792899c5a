"""Anthropic skill-creator's benchmark.json in and out: a hand-written benchmark whose paired
outcome is known by hand is imported and re-tested by `compare`; errored runs are unmeasured,
never failures; a skillos run exported in the format reads back to the same outcomes."""

import json

import pytest
from conftest import run_cli

from skillos.errors import SkillosError
from skillos.evals.records import GameRow
from skillos.evals.skill_creator import CONFIGURATIONS, RESULT_KEYS, benchmark_games, export_benchmark

EVALS = range(1, 13)
RUNS = (1, 2)
# by hand, per (eval, run): without_skill passes evals 1-4; with_skill passes those but not eval 2
# run 2, plus evals 5-8 in both runs; eval 12's with_skill run 1 errored (a billing limit):
# unmeasured. Each run has two expectations, the first always passed, so its pass_rate is 1 or
# 0.5. Each eval is one unit, its two runs its trials: with_skill - without_skill per eval is
# +0.5 for evals 5-8, -0.25 for eval 2 (its runs 1 and 0.5), 0 for the other 7. Wilcoxon over
# the 5 nonzero, exact with the ties: ranks 1 (the -0.25) and 3.5 (four tied +0.5), W- = 1; of
# the 2^5 sign patterns, 2 have W- <= 1 (none negative, or only the rank-1 one): p = 2 * 2/32.
P_BY_HAND = 0.125
# Counted per (eval, run) as independent units, the same data gave exact McNemar b/c 8/1,
# p = 2 * (1 + 9) / 2**9 = 0.039: "significant" only because each eval's luck counted twice.
PSEUDO_REPLICATED_P = 2 * (1 + 9) / 2 ** 9


def _passes(configuration: str, eval_id: int, run: int) -> bool:
    if configuration == "without_skill":
        return eval_id <= 4
    return (eval_id <= 8) and not (eval_id == 2 and run == 2)


def _run(configuration, eval_id, run, passed, errors=0):
    expectations = [{"text": "The report has a title", "passed": True, "evidence": "line 1"},
                    {"text": "The totals add up", "passed": passed and not errors, "evidence": "sum"}]
    return {"eval_id": eval_id, "eval_name": f"eval {eval_id}", "configuration": configuration, "run_number": run,
            "result": {"pass_rate": sum(e["passed"] for e in expectations) / 2, "passed": 1 + passed, "failed":
                       1 - passed, "total": 2, "time_seconds": 30.0, "tokens": 1500, "tool_calls": 4,
                       "errors": errors},
            "expectations": expectations, "notes": []}


def benchmark() -> dict:
    runs = [_run(c, e, r, _passes(c, e, r), errors=int(c == "with_skill" and e == 12 and r == 1))
            for c in ("with_skill", "without_skill") for e in EVALS for r in RUNS]
    return {"metadata": {"skill_name": "report-writer", "evals_run": list(EVALS), "runs_per_configuration": 2},
            "runs": runs, "run_summary": {}, "notes": []}


def test_a_benchmark_is_imported_as_two_arms_each_eval_a_unit_its_runs_trials(tmp_path, skillos_home):
    src = tmp_path / "benchmark.json"
    src.write_text(json.dumps(benchmark()))
    env = {"SKILLOS_HOME": str(skillos_home)}
    done = run_cli("import", src, "--experiment", "creator", "--json", env=env)
    assert done.returncode == 0, done.stderr
    runs = {r["arm"]: r for r in json.loads(done.stdout)["runs"]}
    recorded = runs["with_skill"]["denominators"]
    assert (recorded["attempted"], recorded["measured"], recorded["successes"]) == (12, 12, None)
    assert recorded["mean_score"] == pytest.approx(9.75 / 12) and (recorded["trials"], recorded["trials_unmeasured"]) == (24, 1)
    assert runs["without_skill"]["denominators"]["mean_score"] == pytest.approx(8 / 12)
    assert runs["with_skill"]["cluster"].startswith("12 evals") and "descriptive" in runs["with_skill"]["expectations_passed"]
    result = run_cli("compare", "with_skill", "--control", "without_skill", "--family", "creator", "--json", env=env)
    assert result.returncode == 0, result.stderr
    comparison = json.loads(result.stdout)["arms"][0]["comparison"]
    assert (comparison["b"], comparison["c"], comparison["ties"], comparison["n_paired"]) == (4, 1, 7, 12)
    assert comparison["test"] == "wilcoxon" and comparison["p_value"] == pytest.approx(P_BY_HAND)
    assert comparison["p_value"] > 0.05 > PSEUDO_REPLICATED_P


def test_expectations_of_one_eval_are_one_cluster_not_independent_units():
    """Ten evals of eight expectations; with_skill passes k more expectations of eval k (k = 1..5).
    Counted per expectation (15 gained, 0 lost) exact McNemar would say p = 2/2^15 = 6.1e-5; over
    evals, five distinct gains and no loss: exact Wilcoxon p = 2/2^5 = 0.0625, not below 0.05."""
    from skillos.evals import stats
    from skillos.evals.imported import unit_outcome

    def run(config, eval_id, passed):
        expectations = [{"text": f"check {i}", "passed": i < passed, "evidence": ""} for i in range(8)]
        return {"eval_id": eval_id, "configuration": config, "run_number": 1, "expectations": expectations,
                "result": {"pass_rate": passed / 8, "passed": passed, "failed": 8 - passed, "total": 8, "errors": 0}}

    runs = [run("without_skill", e, 2) for e in range(1, 11)]
    runs += [run("with_skill", e, 2 + (e if e <= 5 else 0)) for e in range(1, 11)]
    games = benchmark_games("b.json", {"runs": runs}, "expectation")
    assert len(games["with_skill"]) == 10 and len(games["with_skill"]["eval-3"]) == 8
    arms = {arm: {e: unit_outcome(t)[1] for e, t in evals.items()} for arm, evals in games.items()}
    clustered = stats.compare_units(arms["without_skill"], arms["with_skill"], alpha=0.05, power=0.8, n_boot=500)
    assert clustered.n_paired == 10 and (clustered.b, clustered.c) == (5, 0)
    assert clustered.p_value == pytest.approx(2 / 32) and not clustered.significant
    flat = {arm: {f"{e}/{k}": v for e, t in evals.items() for k, v in t.items()} for arm, evals in games.items()}
    independent = stats.compare(flat["without_skill"], flat["with_skill"], alpha=0.05, power=0.8, n_boot=500)
    assert independent.p_value == pytest.approx(2 / 2 ** 15)  # what treating them as units would have claimed


def test_an_errored_run_is_unmeasured_never_a_failure():
    data = benchmark()
    games = benchmark_games("b.json", data, "run")
    assert games["with_skill"]["eval-12"]["run-1"] is None  # its expectations say failed; its errors say unmeasured
    assert games["with_skill"]["eval-12"]["run-2"] is False
    assert benchmark_games("b.json", data, "pass_rate")["with_skill"]["eval-12"] == {"run-1": None, "run-2": 0.5}
    # without expectations, passed == total decides; nothing checked (total 0) is unmeasured
    bare = {"runs": [{"eval_id": 1, "configuration": "with_skill", "run_number": 1,
                      "result": {"passed": 3, "total": 3, "errors": 0}},
                     {"eval_id": 2, "configuration": "with_skill", "run_number": 1,
                      "result": {"passed": 2, "total": 3, "errors": 0}},
                     {"eval_id": 3, "configuration": "with_skill", "run_number": 1,
                      "result": {"passed": 0, "total": 0, "errors": 0}}]}
    assert benchmark_games("b.json", bare, "run") == {
        "with_skill": {"eval-1": {"run-1": True}, "eval-2": {"run-1": False}, "eval-3": {"run-1": None}}}
    assert benchmark_games("b.json", bare, "pass_rate")["with_skill"] == {
        "eval-1": {"run-1": 1.0}, "eval-2": {"run-1": 2 / 3}, "eval-3": {"run-1": None}}


def test_expectation_trials_pair_by_eval():
    games = benchmark_games("b.json", benchmark(), "expectation")
    assert len(games["with_skill"]) == len(games["without_skill"]) == 12  # evals, each with 2 x 2 trials
    assert games["without_skill"]["eval-5"]["run-1/exp-1"] is True and games["without_skill"]["eval-5"]["run-1/exp-2"] is False
    assert games["with_skill"]["eval-12"]["run-1/exp-1"] is None  # an errored run's expectations are unmeasured too


@pytest.mark.parametrize("damage, message", [
    (lambda d: d["runs"][0].pop("result"), "no result object"),
    (lambda d: d["runs"].append(dict(d["runs"][0])), "appears twice"),
    (lambda d: d["runs"][0].update(run_number=0), "run_number 0"),
    (lambda d: d["runs"][0]["expectations"][0].update(passed="yes"), "is not true or false"),
    (lambda d: d["runs"][0]["result"].update(errors=-1), "is not a count"),
    (lambda d: d["runs"][0]["result"].update(total=float("nan")), "is not a count"),
])
def test_a_damaged_benchmark_is_one_line_and_records_nothing(tmp_path, skillos_home, damage, message):
    data = benchmark()
    damage(data)
    src = tmp_path / "benchmark.json"
    src.write_text(json.dumps(data))
    done = run_cli("import", src, "--experiment", "creator", env={"SKILLOS_HOME": str(skillos_home)})
    assert done.returncode != 0 and message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (skillos_home / "ledger.db").exists() or "creator" not in (skillos_home / "ledger.db").read_bytes().decode(
        "latin-1")


def _run_folder(tmp_path):
    """A finished two-arm run: 10 games, the curated arm wins 7 (one game unmeasured), the control 3."""
    run = tmp_path / "run"
    run.mkdir()
    rows = []
    for i in range(10):
        game = f"game-{i}"
        rows.append(GameRow(arm="no_memory", game_id=game, success=i < 3, task=f"put a mug in cabinet {i}",
                            task_type="pick_and_place", steps=12).to_dict())
        closed = None if i == 9 else i < 7
        rows.append(GameRow(arm="closed_loop", game_id=game, success=closed, task=f"put a mug in cabinet {i}",
                            task_type="pick_and_place", steps=9, skills_retrieved=["put-things-away"],
                            unmeasured_reason="endpoint outage" if closed is None else None).to_dict())
    (run / "games.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "config.yaml").write_text("eval:\n  arms: [no_memory, closed_loop]\n  control: no_memory\n")
    return run


def test_a_run_exports_in_the_schema_and_reads_back_the_same(tmp_path):
    out = tmp_path / "export"
    written = export_benchmark(_run_folder(tmp_path), out)
    data = json.loads((out / "benchmark.json").read_text())
    assert set(data) == {"metadata", "runs", "run_summary", "notes"}
    assert {r["configuration"] for r in data["runs"]} == {"with_skill", "without_skill"} <= set(CONFIGURATIONS)
    for run in data["runs"]:
        assert set(run) == {"eval_id", "eval_name", "configuration", "run_number", "result", "expectations", "notes"}
        assert set(run["result"]) == set(RESULT_KEYS)
        assert run["result"]["time_seconds"] is None and run["result"]["tokens"] is None  # not measured: null
    assert set(data["run_summary"]) == {"with_skill", "without_skill", "delta"}
    assert data["run_summary"]["with_skill"]["pass_rate"]["mean"] == pytest.approx(7 / 9, abs=1e-4)
    assert data["run_summary"]["delta"]["pass_rate"] == f"{7 / 9 - 3 / 10:+.2f}"
    assert data["run_summary"]["with_skill"]["time_seconds"] is None  # unmeasured: null, which the viewer hides
    assert (written["b"], written["c"], written["unmeasured"]) == (4, 0, {"with_skill": 1, "without_skill": 0})
    by_expectation = benchmark_games(out / "benchmark.json", data, "expectation")  # the unmeasured game: one trial
    assert by_expectation["with_skill"]["eval-10"]["run-1/exp-unmeasured"] is None
    back = {arm: {e: t["run-1"] for e, t in evals.items()}
            for arm, evals in benchmark_games(out / "benchmark.json", data, "run").items()}
    assert sum(v is True for v in back["with_skill"].values()) == 7 and sum(v is None for v in back["with_skill"].values()) == 1
    assert sum(back["without_skill"].values()) == 3 and len(back["without_skill"]) == 10


def test_an_export_names_its_arms_or_refuses(tmp_path):
    run = _run_folder(tmp_path)
    with pytest.raises(SkillosError, match="is not an arm of this run"):
        export_benchmark(run, tmp_path / "x.json", treatment="static_repo")
    with pytest.raises(SkillosError, match="both 'no_memory'; an export compares two arms"):
        export_benchmark(run, tmp_path / "x.json", treatment="no_memory", control="no_memory")
    done = run_cli("export", "skill-creator", run, tmp_path / "b.json", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["with_skill"] == "closed_loop"
