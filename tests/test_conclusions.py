"""Conclusions from the numbers, and recall that reaches everything: the conclusion skillos writes
when an eval finishes carries the verdict function's own words, the family and the best arm's
caveat; a conclusion added later stands beside it; `ledger experiments show` joins checkpoints to
their training metrics and sweep results, and marks imported runs."""

import json
from pathlib import Path

import pytest

import skillos
from conftest import run_cli
from skillos.evals import stats
from skillos.ledger import Ledger

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "evals" / "configs" / "quickstart.yaml"


def decided_again(result: dict, alpha: float) -> dict:
    """The verdicts, decided again by the one verdict function from a report's comparisons."""
    fields = set(stats.Comparison.__dataclass_fields__)
    comparisons = {c["treatment"]: stats.Comparison(**{k: v for k, v in c.items() if k in fields})
                   for c in result["comparisons"]}
    return stats.verdicts(comparisons, alpha=alpha, family=result["family"]["name"], correction="holm")


def rows(successes: list) -> list[dict]:
    return [{"game_id": f"g{i}", "success": s, "unmeasured": s is None, "unmeasured_reason": "outage" if s is None
             else None, "steps": 5, "coerced_actions": 0, "task_type": "pick", "repo_size": 0}
            for i, s in enumerate(successes)]


def test_the_conclusion_of_a_report_is_in_the_verdict_functions_words(tmp_path):
    from skillos.evals import conclusion, report

    cfg = skillos.load(QUICKSTART, ["eval.arms=[no_memory, closed_loop, shuffled]"])
    result = report.build(cfg, {"no_memory": rows([False] * 30), "closed_loop": rows([True] * 24 + [False] * 6),
                                "shuffled": rows([True] * 2 + [False] * 27 + [None])}, tmp_path, n_train=0)
    lines = conclusion.text(result).splitlines()
    decided = decided_again(result, cfg.eval.alpha)
    assert [v.word for v in decided.values()] == ["improvement", "not detected"]
    assert lines[:2] == [f"{arm} vs no_memory: {verdict.line()}" for arm, verdict in decided.items()]
    assert lines[2] == f"family: {result['family']['name']}, 2 comparison(s), corrected with holm"
    assert lines[3].startswith("best arm: closed_loop (80.0% vs 0.0% for no_memory; verdict improvement); best of 2")
    assert lines[4] == "seeds: one (env.seed=0); whether another seed agrees is not measured"


@pytest.mark.slow
def test_the_written_conclusion_is_the_verdict_functions_words(tmp_path, game_cache, skillos_home):
    cfg = skillos.load(QUICKSTART, ["env.n_games=4", "env.n_train_games=4", "eval.workers=1",
                                    "eval.arms=[no_memory, closed_loop, shuffled]"])
    with Ledger(skillos_home / "ledger.db") as ledger:
        result = skillos.evaluate(cfg, out=tmp_path / "run", ledger=ledger)
        eid = result["ledger"]["experiment_id"]
        written = ledger.experiment(eid)
    decided = decided_again(result, cfg.eval.alpha)
    lines = written["conclusion"].splitlines()
    assert [line for line in lines if " vs no_memory: " in line] == [
        f"{arm} vs no_memory: {verdict.line()}" for arm, verdict in decided.items()]
    assert f"family: {result['family']['name']}, 2 comparison(s), corrected with holm" in lines
    assert any(line.startswith("best arm: ") and "best of 2 arms" in line for line in lines)
    assert written["conclusions"][0]["by"] == "skillos" and result["ledger"]["conclusion"] == written["conclusion"]
    # a person's or an agent's conclusion stands beside it; it never replaces skillos's
    added = run_cli("ledger", "experiments", "conclude", eid, "--text", "closed_loop did not replicate")
    assert added.returncode == 0, added.stderr
    shown = json.loads(run_cli("ledger", "experiments", "show", eid, "--json").stdout)
    assert shown["conclusion"] == written["conclusion"] and shown["status"] == "concluded"
    assert [c["text"] for c in shown["conclusions"]] == [written["conclusion"], "closed_loop did not replicate"]
    text = run_cli("ledger", "experiments", "show", eid).stdout
    assert "conclusion by skillos at" in text and "closed_loop did not replicate" in text
    assert run_cli("ledger", "experiments", "conclude", eid, "--text", " ").returncode == 2


def test_show_joins_checkpoints_metrics_sweeps_and_imported_runs(tmp_path, skillos_home):
    ckpt = tmp_path / "checkpoints" / "archive" / "checkpoint-2"
    ckpt.mkdir(parents=True)
    (ckpt / "trainer_state.json").write_text(json.dumps({"log_history": [
        {"step": 1, "loss": 0.5}, {"step": 2, "loss": 0.25, "reward": 0.75, "epoch": 0.1}]}))
    bare = tmp_path / "checkpoints" / "archive" / "checkpoint-4"  # no trainer state: said, not zero
    bare.mkdir()
    sweep_out = tmp_path / "sweep"
    sweep_out.mkdir()
    verdict = {"label": "not detected (below the MDE)", "line": "not detected: ...", "p_adjusted": 1.0}
    (sweep_out / "report.json").write_text(json.dumps({"comparisons": [
        {"treatment": "curator:checkpoint-2", "difference": 0.0, "verdict": verdict}]}))
    summary = {"attempted": 4, "measured": 4, "unmeasured": 0, "successes": 3, "coerced_actions": 0, "actions": 9}
    with Ledger(skillos_home / "ledger.db") as ledger:
        train = ledger.add_experiment("train-exp", config_hash="h1")
        run = ledger.start_run(train, "train", {"training": {}})
        ledger.add_checkpoint(run, str(ckpt), 2)
        ledger.add_checkpoint(run, str(bare), 4)
        ledger.add_eval(ledger.start_run(train, "imported-arm", {"imported": {"sources": {"a.jsonl": "abc"}}}),
                        "imported-arm", summary, None, None)
        sweep = ledger.add_experiment("train-exp-sweep", config_hash="h2")
        swept = ledger.start_run(sweep, "curator:checkpoint-2", {"output": str(sweep_out), "eval": {
            "curators": {"checkpoint-2": str(ckpt)}}})
        ledger.add_eval(swept, "curator:checkpoint-2", summary, None, None)
        ledger.end_run(swept)
    shown = json.loads(run_cli("ledger", "experiments", "show", "train-exp", "--json").stdout)
    first, second = shown["checkpoints"]
    assert first["training_metrics"] == {"step": 2, "loss": 0.25, "reward": 0.75, "epoch": 0.1}
    assert second["training_metrics"] is None and "trainer_state.json" in second["training_metrics_reason"]
    (result,) = first["sweeps"]
    assert (result["experiment"], result["successes"], result["n_measured"], result["verdict"]) == (
        "train-exp-sweep", 3, 4, "not detected (below the MDE)")
    assert second["sweeps"] == []
    assert [r["imported"] for r in shown["runs"]] == [None, {"sources": {"a.jsonl": "abc"}}]
    text = run_cli("ledger", "experiments", "show", "train-exp").stdout
    assert "checkpoint step 2" in text and "loss 0.25, reward 0.75" in text and "swept in train-exp-sweep" in text
    assert "imported from 1 file(s)" in text and "not swept yet" in text
    assert shown["peaks"]["per_run"] == [{"run_id": run, "seed": None, "step": 2, "difference": 0.0,
                                          "verdict": "not detected (below the MDE)"}]
    assert shown["peaks"]["spread_steps"] is None and "1 run(s)" in shown["peaks"]["spread_reason"]
    assert "peak checkpoints: run #1 (seed None) at step 2" in text


def test_a_conclusion_added_later_stands_beside_skillos_own(tmp_path, skillos_home):
    from skillos.evals import conclusion, report

    cfg = skillos.load(QUICKSTART)
    result = report.build(cfg, {"no_memory": rows([False] * 8), "closed_loop": rows([True] * 8)}, tmp_path, n_train=0)
    with Ledger(skillos_home / "ledger.db") as ledger:
        eid = ledger.add_experiment("q", config_hash=cfg.hash())
        own = conclusion.write(ledger, eid, result)
    assert "the only arm compared" in own
    assert run_cli("ledger", "experiments", "conclude", eid, "--text", "closed_loop did not replicate").returncode == 0
    shown = json.loads(run_cli("ledger", "experiments", "show", eid, "--json").stdout)
    assert shown["conclusion"] == own and shown["status"] == "concluded"
    assert [(c["by"], c["text"]) for c in shown["conclusions"]][0] == ("skillos", own)
    assert shown["conclusions"][1]["text"] == "closed_loop did not replicate" and shown["conclusions"][1]["by"] != "skillos"
    text = run_cli("ledger", "experiments", "show", eid).stdout
    assert "conclusion by skillos at" in text and "closed_loop did not replicate" in text


def test_the_peak_checkpoints_of_seed_runs_and_their_spread():
    from skillos.evals.recall import peaks

    def ckpt(run, step, *differences):
        return {"run_id": run, "step": step, "sweeps": [{"difference": d, "verdict": "not detected"} for d in differences]}

    runs = [{"id": 1, "seed": 0}, {"id": 2, "seed": 1}, {"id": 3, "seed": 2}]
    found = peaks(runs, [ckpt(1, 10, 0.05), ckpt(1, 20, 0.2), ckpt(2, 10, 0.1, 0.3), ckpt(2, 20, 0.15),
                         ckpt(3, 10), ckpt(3, 20, None)])
    assert [(p["seed"], p["step"], p["difference"]) for p in found["per_run"]] == [(0, 20, 0.2), (1, 10, 0.3)]
    assert found["spread_steps"] == 10 and found["runs_not_swept"] == [3]  # counted, never a step 0
