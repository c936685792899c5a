"""Replicates and matrices: `experiment.seeds` x `matrix:` expand one config into the runs of one
experiment; every comparison of every run is judged in one family; the seeds say whether they
agree and are pooled with a CI across seeds; a killed matrix resumes where it stopped."""

import json
import re
from pathlib import Path

import pytest

import skillos
from conftest import run_cli
from skillos import config, gates
from skillos.config import ConfigError
from skillos.evals import matrix, report, stats
from skillos.errors import SkillosError
from skillos.ledger import Ledger

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "evals" / "configs" / "quickstart.yaml"
SMOKE = ROOT / "training" / "configs" / "cpu-smoke.yaml"
PAPER = ROOT / "training" / "configs" / "skillos-paper-alfworld.yaml"
MATRIX = ["experiment.seeds=[0, 1]", "matrix={mode: {key: retrieval.mode, values: [bm25, shuffled]}}"]


def test_seeds_and_a_matrix_expand_into_the_runs_of_one_experiment():
    cfg = config.load(QUICKSTART, MATRIX)
    runs = config.expand(cfg)
    assert [r.label for r in runs] == ["mode-bm25_seed-0", "mode-bm25_seed-1", "mode-shuffled_seed-0",
                                       "mode-shuffled_seed-1"]
    assert [(r.cfg.retrieval.mode, r.cfg.env.seed) for r in runs] == [
        ("bm25", 0), ("bm25", 1), ("shuffled", 0), ("shuffled", 1)]
    assert {r.cfg.experiment_hash() for r in runs} == {cfg.hash()}  # one experiment: the matrix's hash
    assert all(not r.cfg.matrix and r.cfg.experiment.seeds is None for r in runs)
    trained = config.expand(config.load(SMOKE, ["experiment.seeds=[3, 4]"]))
    assert [(r.cfg.env.seed, r.cfg.training.seed) for r in trained] == [(3, 3), (4, 4)]
    assert [r.label for r in config.expand(config.load(QUICKSTART))] == ["run"]  # neither: the config itself


@pytest.mark.parametrize("sets, message", [
    (["matrix={lr: {key: training.learnin_rate, values: [1]}}"], "matrix.lr.key: 'training.learnin_rate' is not a config key"),
    (["matrix={k: {key: retrieval.top_k, values: []}}"], "matrix.k.values: a non-empty list"),
    (["matrix={k: {key: retrieval.top_k, values: [many]}}"], "matrix run k-many: retrieval.top_k: expected int"),
    (["matrix={s: {key: env.seed, values: [1, 2]}}"], "seeds go in experiment.seeds"),
    (["experiment.seeds=[1, 1]"], "experiment.seeds: a seed is repeated"),
    (["experiment.seeds=[]"], "experiment.seeds: a list of integer seeds"),
    # one key set by two axes: the later would win and the labels would name values that never ran
    (["matrix={m: {key: executor.model, values: [a, b]}, e: {key: executor, values: [{model: c}]}}"],
     "matrix.e.key: 'executor' overlaps matrix.m.key 'executor.model'"),
    (["matrix={a: {key: retrieval.top_k, values: [1, 2]}, b: {key: retrieval.top_k, values: [3]}}"],
     "matrix.b.key: 'retrieval.top_k' overlaps matrix.a.key 'retrieval.top_k'"),
    # bounded before any run's config is built: 100 x 100 x 10 seeds is refused, not expanded
    ([f"matrix={{a: {{key: retrieval.top_k, values: {list(range(1, 101))}}}, b: {{key: eval.bootstrap, "
      f"values: {list(range(1000, 1100))}}}}}", f"experiment.seeds={list(range(10))}"],
     "matrix: 100,000 runs (100 x 100 x 10 seeds); one experiment holds at most 512"),
])
def test_a_bad_matrix_is_one_line_naming_the_axis(sets, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        config.load(QUICKSTART, sets)
    result = run_cli("gate", "check", QUICKSTART, *[x for s in sets for x in ("--set", s)])
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def rows(successes: list) -> list[dict]:
    return [{"game_id": f"g{i}", "success": s, "unmeasured": s is None, "unmeasured_reason": None, "steps": 5,
             "coerced_actions": 0, "task_type": "pick", "repo_size": 0} for i, s in enumerate(successes)]


def test_the_family_spans_every_run_and_the_seeds_are_pooled(tmp_path):
    cfg = config.load(QUICKSTART, MATRIX)
    runs = config.expand(cfg)
    treated = {"mode-bm25_seed-0": [True] * 20 + [False] * 10, "mode-bm25_seed-1": [True] * 18 + [False] * 12,
               "mode-shuffled_seed-0": [True] * 15 + [False] * 15, "mode-shuffled_seed-1": [False] * 30}
    results = {r.label: report.build(r.cfg, {"no_memory": rows([False] * 30), "closed_loop": rows(treated[r.label])},
                                     tmp_path, n_train=0) for r in runs}
    summary = matrix.summarize(cfg, runs, results, {r.label: tmp_path / r.label for r in runs})
    assert summary["family"]["size"] == 4
    fields = set(stats.Comparison.__dataclass_fields__)
    members = {f"{label}: closed_loop vs no_memory": stats.Comparison(**{k: v for k, v in c.items() if k in fields})
               for label, result in results.items() for c in result["comparisons"]}
    decided = stats.verdicts(members, alpha=0.05, family=summary["family"]["name"], correction="holm")
    assert [r["verdict"]["line"] for r in summary["rows"]] == [v.line() for v in decided.values()]
    assert [r["verdict"]["p_adjusted"] for r in summary["rows"]] == [v.p_adjusted for v in decided.values()]
    bm25, shuffled = summary["points"]
    assert bm25["agree"] and [s["verdict"] for s in bm25["per_seed"]] == ["improvement", "improvement"]
    assert bm25["pooled"]["mean"] == pytest.approx((20 / 30 + 18 / 30) / 2)
    half = 12.706204736 * stats.mean_ci([20 / 30, 18 / 30], 0.05)["sd"] / 2 ** 0.5  # t(0.975, 1 df)
    assert bm25["pooled"]["ci_low"] == pytest.approx(bm25["pooled"]["mean"] - half)
    assert not shuffled["agree"] and [s["verdict"] for s in shuffled["per_seed"]] == ["improvement", "not detected"]
    assert shuffled["pooled"]["mean"] == pytest.approx(0.25) and shuffled["pooled"]["ci_low"] == -1.0  # cut to [-1, 1]
    lines = matrix.conclusion(summary).splitlines()
    assert lines[:4] == [f"{k}: {v.line()}" for k, v in decided.items()]
    assert lines[4] == f"family: {summary['family']['name']}, 4 comparison(s), corrected with holm"
    assert "best of 4 arms" in lines[5] and lines[6].startswith("seeds at mode=bm25, closed_loop: agree (improvement: seed 0, 1)")
    assert lines[7].startswith("seeds at mode=shuffled, closed_loop: disagree (improvement: seed 0; not detected: seed 1)")


def approved_plan(report):
    return next(r for r in report.results if r.check == "approved-plan")


def test_the_runs_of_a_matrix_launch_on_the_matrixs_approved_plan(skillos_home):
    cfg = config.load(PAPER, ["experiment.seeds=[0, 1]"])
    child = config.expand(cfg)[1].cfg
    assert approved_plan(gates.check(child, command="eval")).status == "FAIL"
    with Ledger(skillos_home / "ledger.db") as ledger:
        ledger.add_approval(cfg.plan_hash(), "0" * 64, {"plan": 1}, "person")
    assert approved_plan(gates.check(child, command="eval")).status == "PASS"


def test_train_expands_seeds_and_a_cross_domain_sweep_refuses_a_matrix(tmp_path):
    dry = run_cli("train", SMOKE, "--dry-run", "--json", "--set", "experiment.seeds=[3, 4]")
    assert dry.returncode == 0, dry.stderr
    assert list(json.loads(dry.stdout)["runs"]) == ["seed-3", "seed-4"]
    gpu = run_cli("train", PAPER, "--dry-run", "--set", "experiment.seeds=[3, 4]")
    assert gpu.returncode == 2 and "compute.backend local only" in gpu.stderr
    sweep = run_cli("sweep", QUICKSTART, "--repo", tmp_path, "--executor", "heuristic", "--env", "household",
                    "--env", "reasoning", "--set", "experiment.seeds=[1, 2]")
    assert sweep.returncode == 2 and "a cross-domain sweep (several --env) takes one config" in sweep.stderr


@pytest.mark.slow
def test_a_two_seed_two_variant_matrix_is_one_experiment_and_resumes_after_a_kill(tmp_path, game_cache, skillos_home):
    """The issue's check: four runs, one experiment, one family, a pooled result; killed in its
    third run, rerun with --resume: the two finished runs are not played again."""
    cfg = skillos.load(QUICKSTART, MATRIX + ["env.n_games=4", "env.n_train_games=4", "eval.workers=1"])
    started = []

    def kill_in_run_three(arm, phase, done, total, live=""):
        if len(started) == 3 and done >= 1:
            raise KeyboardInterrupt

    with Ledger(skillos_home / "ledger.db") as ledger:
        with pytest.raises(KeyboardInterrupt):
            skillos.evaluate(cfg, out=tmp_path / "m", ledger=ledger, progress=kill_in_run_three,
                             echo=lambda line: started.append(line) if line.startswith("run ") else None)
        finished_before = [r["id"] for r in ledger.rows("runs") if r["status"] == "finished"]
        assert len(finished_before) == 4  # two runs x two arms
        # a family fixed by its first results never shrinks: a resume with one seed is refused, before any game
        fewer = skillos.load(QUICKSTART, ["experiment.seeds=[0]", MATRIX[1], "env.n_games=4", "env.n_train_games=4",
                                          "eval.workers=1"])
        with pytest.raises(SkillosError, match=r"its family already holds 4 runs with results, and this config drops "
                                               r"2 of them \(mode-bm25_seed-1, mode-shuffled_seed-1\)"):
            skillos.evaluate(fewer, out=tmp_path / "m", ledger=ledger, resume=True)
        assert len(ledger.rows("runs")) == 6 and len(ledger.experiments()) == 1  # nothing recorded by it
        result = skillos.evaluate(cfg, out=tmp_path / "m", ledger=ledger, resume=True)
        runs = ledger.rows("runs")
        experiments = ledger.experiments()
    assert len(experiments) == 1 and experiments[0]["config_hash"] == cfg.hash()
    statuses = [r["status"] for r in runs]
    assert statuses.count("finished") == 8 and statuses.count("interrupted") == 2  # nothing finished twice
    summary = result["matrix"]
    assert [r["label"] for r in summary["runs"]] == [r.label for r in config.expand(cfg)]
    assert summary["family"]["size"] == 4 and len(summary["points"]) == 2
    assert all(p["pooled"]["n"] + p["n_unmeasured_seeds"] == 2 for p in summary["points"])
    assert json.loads((tmp_path / "m" / "matrix.json").read_text())["conclusion"] == summary["conclusion"]
    assert experiments[0]["conclusion"] == summary["conclusion"]
    assert [c["by"] for c in experiments[0]["conclusions"]] == ["skillos"]  # one, the matrix's


def test_the_plan_of_a_matrix_counts_every_run_and_its_family(tmp_path):
    result = run_cli("plan", QUICKSTART, "--out", tmp_path / "p.json", "--json", *[x for s in MATRIX for x in ("--set", s)])
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)["plan"]
    assert [r["label"] for r in plan["runs"]] == [r.label for r in config.expand(config.load(QUICKSTART, MATRIX))]
    assert plan["games"]["runs"] == 4 and plan["games"]["total"] == 4 * (60 * 2 + 60)
    assert plan["seeds"] == {"experiment.seeds": [0, 1]}
    family = plan["mde_in_family"]
    assert family["family_size"] == 4 and family["mde"] == pytest.approx(stats.mde(60, 0.3, 0.05 / 4, 0.8))


@pytest.mark.slow
def test_a_sweep_over_seeds_is_one_family_with_the_peaks_spread(tmp_path, game_cache, skillos_home):
    for step in (10, 20):
        skill = tmp_path / f"checkpoint-{step}" / "where-to-find-mug"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text("---\nname: where-to-find-mug\ndescription: Where mugs were found.\n---\n\n")
    result = run_cli("sweep", QUICKSTART, "--repo", tmp_path / "checkpoint-10", "--repo", tmp_path / "checkpoint-20",
                     "--executor", "heuristic", "--n-games", 4, "--n-train-games", 4, "--set", "experiment.seeds=[0, 1]",
                     "--json", "--out", tmp_path / "sweep")
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout)["matrix"]
    assert [r["label"] for r in summary["runs"]] == ["seed-0", "seed-1"] and summary["family"]["size"] == 4
    assert {p["arm"] for p in summary["points"]} == {"repo:checkpoint-10", "repo:checkpoint-20"}
    peaks = summary["peaks"]["per_run"]
    assert [p["seed"] for p in peaks] == [0, 1] and all(p["step"] in (10, 20) for p in peaks)
    assert summary["peaks"]["spread_steps"] == max(p["step"] for p in peaks) - min(p["step"] for p in peaks)
    assert "peak per run: seed-0: checkpoint-" in summary["conclusion"]
    with Ledger(skillos_home / "ledger.db") as ledger:
        (experiment,) = ledger.experiments()
    assert experiment["name"] == "quickstart-sweep" and experiment["conclusion"] == summary["conclusion"]
