"""eval.trials: each held-out game played several times per arm, each play with its own sampling
seed, kept as one unit (a game) whose trials the paired tests average (issue 62, item 3)."""

from __future__ import annotations

import json
import random

import pytest

from conftest import ROOT, run_cli
from skillos.evals.backends.chat import SAMPLING_SEED, Draws
from skillos.evals.envs.scripted import ScriptedEnv, ScriptedGame
from skillos.evals.runner import run_arm, trial_seed


class SeededExecutor:
    """Wins a game when the play's sampling seed is even: what a sampling executor's luck is,
    with the seed it was given visible in `seeds`."""

    name = "seeded"

    def __init__(self):
        self.seeds = []

    def new_episode(self, task, skills):
        draws = SAMPLING_SEED.get()
        seed = None if draws is None else draws.seed
        self.seeds.append(seed)
        win = seed is not None and random.Random(seed).random() < 0.5

        class Episode:
            def act(self, observation, admissible):
                return "take mug" if win else "look"

        return Episode()


class CountingCurator:
    def __init__(self):
        self.games = 0

    def curate(self, traj, repo):
        self.games += 1
        return []


def _arm(tmp_path, trials, games=4, curator=None):
    from skillos.repo import SkillRepo

    executor = SeededExecutor()
    rows = run_arm("a", [ScriptedGame(f"g{i}") for i in range(games)], env=ScriptedEnv(), make_env=ScriptedEnv,
                   executor=executor, repo=SkillRepo(None), curator=curator, retrieval_mode="bm25", max_steps=2,
                   top_k=0, out=tmp_path / "games.jsonl", concurrency=1, wave_size=1, trials=trials)
    return rows, executor


def test_each_game_is_played_trials_times_with_its_own_seeds_into_one_row(tmp_path):
    curator = CountingCurator()
    rows, executor = _arm(tmp_path, trials=3, curator=curator)
    assert [r["game_id"] for r in rows] == ["g0", "g1", "g2", "g3"]  # one unit a game, never one a play
    assert executor.seeds == [trial_seed(f"g{i}", k) for i in range(4) for k in range(3)]
    assert len(set(executor.seeds)) == 12 and SAMPLING_SEED.get() is None  # distinct, and reset after
    for r in rows:
        want = [float(random.Random(trial_seed(r["game_id"], k)).random() < 0.5) for k in range(3)]
        assert r["trials"] == want and r["success"] is None and r["unmeasured"] is False
        assert r["schema_version"] == 2
    assert any(0 < sum(r["trials"]) < 3 for r in rows)  # the trials of one game can disagree
    assert curator.games == 4  # curated once a game, after its first play
    traces = [json.loads(line) for line in (tmp_path / "trajectories.jsonl").read_text().splitlines()]
    assert [(t["game_id"], t["trial"]) for t in traces] == [(f"g{i}", k) for i in range(4) for k in range(3)]
    # a resume keeps every trial of a finished game
    from skillos.evals.trace import prune

    prune(tmp_path / "trajectories.jsonl", {("a", "eval", "g0")})
    kept = [json.loads(line) for line in (tmp_path / "trajectories.jsonl").read_text().splitlines()]
    assert [(t["game_id"], t["trial"]) for t in kept] == [("g0", 0), ("g0", 1), ("g0", 2)]


def test_one_trial_a_game_is_the_binary_row_it_always_was(tmp_path):
    rows, executor = _arm(tmp_path, trials=1)
    assert executor.seeds == [None] * 4  # no seed is imposed on a single play
    assert all(r["trials"] is None and r["success"] is not None and r["schema_version"] == 1 for r in rows)


def test_an_unmeasured_trial_stays_unmeasured_and_the_game_counts_as_measured_by_the_others(tmp_path):
    from skillos.evals.runner import trials_row
    from skillos.evals.trajectory import Trajectory

    won = Trajectory(game_id="g", task="t", task_type="x", won=True)
    lost = Trajectory(game_id="g", task="t", task_type="x", won=None, unmeasured_reason="APIError: 503")
    row = trials_row("a", [won, lost], 0)
    assert row["trials"] == [1.0, None] and row["unmeasured"] is False
    assert row["unmeasured_reason"] == "1 of 2 trials unmeasured: APIError: 503"  # said, though the game counts
    none = trials_row("a", [lost, lost], 0)
    assert none["unmeasured"] is True and none["unmeasured_reason"] == "APIError: 503"


def test_an_eval_with_trials_reports_mean_scores_over_games_and_tests_games(tmp_path, game_cache, skillos_home):
    """The whole eval through the CLI: rows hold each game's trials, the report the arms' mean
    scores with their trials counted and the paired test over games (Wilcoxon, the units whose
    trials all agree named uninformative); the gates say the trials of a deterministic executor
    play alike, and the exports keep each trial."""
    out = tmp_path / "run"
    result = run_cli("eval", ROOT / "evals" / "configs" / "quickstart.yaml", "--out", out, "--json",
                     "--set", "env.n_games=4", "--set", "env.n_train_games=4", "--set", "eval.trials=2",
                     "--override", "mde=a 4-game check of the trials' plumbing")
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["env"]["trials"] == 2
    for arm in ("no_memory", "closed_loop"):
        a = report["arms"][arm]
        assert a["successes"] is None and a["trials"] == 8 and a["trials_unmeasured"] == 0 and a["measured"] == 4
        assert a["success_rate"] == a["mean_score"]
    (comp,) = report["comparisons"]
    assert comp["test"] == "wilcoxon" and comp["n_paired"] == 4 and comp["n_trials"] == {"control": 8, "treatment": 8}
    assert comp["uninformative"] == comp["ties"]  # the heuristic plays each trial of a game alike
    rows = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    assert len(rows) == 8 and all(len(r["trials"]) == 2 and len(set(r["trials"])) == 1 for r in rows)
    assert "trials-sample" in result.stderr and "play alike" in result.stderr
    resumed = run_cli("eval", ROOT / "evals" / "configs" / "quickstart.yaml", "--out", out, "--resume",
                      "--set", "env.n_games=4", "--set", "env.n_train_games=4", "--set", "eval.trials=2")
    assert resumed.returncode == 0 and "already finished" in resumed.stderr + resumed.stdout
    # the exports keep each trial: skill-creator's runs (run_number the trial), inspect's epochs, and
    # eval-results' value the arm's mean score
    bench = run_cli("export", "skill-creator", out, tmp_path / "b.json")
    assert bench.returncode == 0, bench.stderr[-2000:]
    benchmark = json.loads((tmp_path / "b.json").read_text())
    assert benchmark["metadata"]["runs_per_configuration"] == 2 and len(benchmark["runs"]) == 16
    assert sorted({r["run_number"] for r in benchmark["runs"]}) == [1, 2]
    assert any("Wilcoxon signed-rank p" in n and "games up/down" in n for n in benchmark["notes"])
    assert "Wilcoxon signed-rank p" in bench.stdout and "McNemar" not in bench.stdout  # the line it prints, too
    results = run_cli("export", "eval-results", out, tmp_path / "repo")
    assert results.returncode == 0, results.stderr[-2000:]
    import yaml

    (entry,) = yaml.safe_load((tmp_path / "repo" / ".eval_results" / "household_closed_loop.yaml").read_text())
    assert entry["value"] == round(100 * report["arms"]["closed_loop"]["mean_score"], 2)
    assert "(8 trials, 0 unmeasured)" in entry["notes"] and "Wilcoxon signed-rank p" in entry["notes"]
    pytest.importorskip("inspect_ai")
    logged = run_cli("export", "inspect", out, tmp_path / "log.json")
    assert logged.returncode == 0, logged.stderr[-2000:]
    log = json.loads((tmp_path / "log.json").read_text())
    assert log["eval"]["config"]["epochs"] == 2 and len(log["samples"]) == 16
    assert {s["epoch"] for s in log["samples"]} == {1, 2} and all(s["scores"] for s in log["samples"])
    assert all(len(s["messages"]) > 2 for s in log["samples"])  # each trial's own trace
    # each epoch's counts are its own trial's: together they are the rows' (which sum each game's trials)
    assert sum(s["metadata"]["steps"] for s in log["samples"]) == sum(r["steps"] for r in rows)


def test_gate_5_plans_over_games_never_over_plays():
    from skillos import config as cfgmod
    from skillos import gates

    cfg = cfgmod.load(ROOT / "evals" / "configs" / "quickstart.yaml")
    one = {r.check: r for r in gates.check(cfg).results}["mde"]
    cfg.eval.trials = 4
    four = {r.check: r for r in gates.check(cfg).results}["mde"]
    assert four.values["mde"] == pytest.approx(one.values["mde"]) and four.values["trials"] == 4
    assert "over the 60 games, not 240 plays" in four.detail


def test_a_sampling_request_carries_the_trials_seed():
    from skillos.config import ExecutorConfig
    from skillos.evals.backends.openai_chat import request_body

    c = ExecutorConfig(backend="openai", model="gpt-4o-mini", temperature=0.7)
    assert "seed" not in request_body(c, [{"role": "user", "content": "hi"}])
    token = SAMPLING_SEED.set(Draws(1234))
    try:  # each call of a play takes the next of its seeds
        assert [request_body(c, [{"role": "user", "content": "hi"}])["seed"] for _ in range(2)] == [1234, 1235]
        greedy = ExecutorConfig(backend="openai", model="gpt-4o-mini", temperature=0)
        assert "seed" not in request_body(greedy, [{"role": "user", "content": "hi"}])
    finally:
        SAMPLING_SEED.reset(token)


def test_the_error_budget_counts_plays_so_an_outage_that_spares_one_trial_a_game_still_aborts(tmp_path):
    """1 play in 3 of every game errors: no game is wholly unmeasured, and the arm aborts anyway."""
    from skillos.evals.runner import ArmAborted
    from skillos.repo import SkillRepo

    class FlakyExecutor(SeededExecutor):
        def new_episode(self, task, skills):
            if len(self.seeds) % 3 == 2:
                self.seeds.append(None)
                raise RuntimeError("APIError: 503")
            return super().new_episode(task, skills)

    with pytest.raises(ArmAborted, match=r"of \d+ plays unmeasured .*1 of 3 trials unmeasured: .*APIError: 503"):
        run_arm("a", [ScriptedGame(f"g{i}") for i in range(30)], env=ScriptedEnv(), make_env=ScriptedEnv,
                executor=FlakyExecutor(), repo=SkillRepo(None), retrieval_mode="bm25", max_steps=2, top_k=0,
                concurrency=1, wave_size=1, trials=3, max_error_rate=0.02)


def test_losing_plays_that_error_out_in_one_arm_are_attrition_not_an_improvement():
    """No true effect; a treatment play that would have lost errors out 60% of the time. Over
    whole games the means rise; the sign test over games that lost more trials in one arm says
    attrition, with the trials counted."""
    from skillos.evals import stats

    rng = random.Random(1)
    control, treatment = {}, {}
    for g in range(60):
        control[f"g{g}"] = [float(rng.random() < 0.4) for _ in range(3)]
        treatment[f"g{g}"] = [1.0 if rng.random() < 0.4 else (None if rng.random() < 0.6 else 0.0) for _ in range(3)]
    comp = stats.compare_units(control, treatment, names=("t", "c"), alpha=0.05, power=0.8, n_boot=2000)
    verdict = stats.verdicts({"t": comp}, alpha=0.05, family="f", correction="holm", worthwhile=0.2)["t"]
    assert comp.attrition_of == "trials" and comp.attrition_p < 0.05 and comp.treatment_unmeasured <= 1  # whole games
    assert verdict.word == "attrition" and "trials unmeasured" in verdict.line()
    assert f"{comp.trials_unmeasured['treatment']}/180 trials" in verdict.line()


def test_the_cost_gate_counts_every_play_of_a_game():
    from skillos import config as cfgmod
    from skillos.evals import prices

    cfg = cfgmod.from_dict({"executor": {"backend": "openai", "model": "gpt-4o-mini"},
                            "env": {"n_games": 10, "n_train_games": 0, "max_steps": 5},
                            "eval": {"arms": ["no_memory", "closed_loop"], "trials": 3}})
    calls, how = prices._calls(cfg, "executor", 1, None)
    assert calls == 10 * 3 * 2 * 5 and "eval.trials 3" in how


def test_the_trace_follows_eval_trials_only_where_a_launch_plays_it():
    """`skillos eval` plays each game eval.trials times; an optimize launch plays each once, so the
    trace says the value reaches no code there (checked but not applied), never "applied"."""
    from skillos import config as cfgmod
    from skillos import gates

    cfg = cfgmod.load(ROOT / "evals" / "configs" / "quickstart.yaml")
    cfg.eval.trials = 3
    rows = {row.key: row for row in gates.check(cfg, trace=True).trace}
    assert rows["eval.trials"].applied is True and "runner.run_arm(trials=)" in rows["eval.trials"].line()
    rows = {row.key: row for row in gates.check(cfg, command="optimize", trace=True).trace}
    assert rows["eval.trials"].applied is False and "plays each game once" in rows["eval.trials"].line()
