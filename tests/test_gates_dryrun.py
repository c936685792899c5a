"""The gate checks that execute code: on the CPU smoke config they pass against the real
ALFWorld engine; each trips when the code path it guards is broken the way the reference
project's was (broken by monkeypatching the toolkit's own function, never the check)."""

import copy

import pytest
import yaml

from conftest import ROOT
from skillos import config, gates

SMOKE = ROOT / "training" / "configs" / "cpu-smoke.yaml"
QUICKSTART = ROOT / "evals" / "configs" / "quickstart.yaml"
DRY = ("tool-surface", "top-k-used", "sentinels", "reward-arithmetic", "rollout-positions",
       "task-distribution", "splits-disjoint", "disk")


def dry(path=SMOKE, **changes):
    data = yaml.safe_load(path.read_text())
    for dotted, value in changes.items():
        section, key = dotted.split(".")
        data.setdefault(section, {})[key] = value
    cfg = config.from_dict(copy.deepcopy(data))
    cfg.source = path
    report = gates.check(cfg, dry_run=True)
    return report, {r.check: r for r in report.results}


def test_cpu_smoke_passes_every_dry_run_check(game_cache):
    report, results = dry()
    assert report.exit_code == 0, [r.line() for r in report.failed]
    for name in DRY:
        assert results[name].status == "PASS", results[name].line()
    health = results["rollout-positions"].detail
    assert "positions measured median 2 (min 2, max 2) of 2 over 2 rollouts" in health
    assert "0 unmeasured rollouts neutralised" in health
    assert "2 task types" in results["task-distribution"].detail
    assert "training rollouts refuse held-out games" in results["splits-disjoint"].detail


def test_quickstart_dry_run_plays_real_games(game_cache):
    report, results = dry(QUICKSTART, **{"env.n_games": 6, "env.n_train_games": 6})
    assert report.exit_code == 0, [r.line() for r in report.failed]
    assert results["rollout-positions"].seen == "3 of 3"
    assert results["splits-disjoint"].status == "PASS"
    assert results["tool-surface"].status == "SKIP"  # an eval config has no curator tools


def test_a_fixed_task_loop_is_refused(game_cache):
    # 2 games per task type and 20 steps: every type's second group repeats its first
    _, results = dry(**{"env.n_train_games": 12, "training.group_size": 2, "training.max_steps": 20})
    r = results["task-distribution"]
    assert r.status == "FAIL" and 3 in r.gates and "a group repeats" in r.detail


def test_an_extra_public_method_is_an_extra_tool(game_cache, monkeypatch):
    from skillos.training.curator.env import CuratorEnv

    monkeypatch.setattr(CuratorEnv, "debug_repo", lambda self: "", raising=False)
    _, results = dry()
    r = results["tool-surface"]
    assert r.status == "FAIL" and r.seen == ["curate_and_advance", "debug_repo"]


def test_errors_scored_as_failures_are_caught(game_cache, monkeypatch):
    from skillos.evals import runner

    real = runner.play

    def scores_errors_as_losses(*args, **kw):
        traj = real(*args, **kw)
        if traj.won is None:
            traj.won = False  # the reference's sentinel: an API error became a failure
        return traj

    monkeypatch.setattr(runner, "play", scores_errors_as_losses)
    _, results = dry()
    r = results["sentinels"]
    assert r.status == "FAIL" and 2 in r.gates and "TimeoutError scored as success=False" in r.detail


def test_a_reward_over_positions_reached_is_caught(game_cache, monkeypatch):
    from skillos.training.curator import reward

    def over_reached(positions, group_size):  # the reference: success over positions reached
        measured = [p for p in positions[1:] if p is not None]
        return sum(measured) / len(measured) if measured else None

    monkeypatch.setattr(reward, "task_reward", over_reached)
    _, results = dry()
    r = results["reward-arithmetic"]
    assert r.status == "FAIL" and "scored over those 2" in r.detail


def test_a_launch_path_that_ignores_top_k_is_caught(game_cache, monkeypatch):
    from skillos.evals import arms as experiment

    real = experiment.arm_settings
    monkeypatch.setattr(experiment, "arm_settings", lambda cfg, *a, **kw: {**real(cfg, *a, **kw), "top_k": 3})
    _, results = dry()
    r = results["top-k-used"]
    assert r.status == "FAIL" and r.seen == 3 and r.expected == 5


def test_unmeasured_positions_fail_the_rollout_check(game_cache, monkeypatch):
    from skillos.evals.envs.registry import environment

    class Down:
        name = "down"

        def new_episode(self, task, skills):
            raise ConnectionError("endpoint unreachable")

    monkeypatch.setattr(environment("household"), "make_executor", lambda cfg: Down())
    _, results = dry()
    r = results["rollout-positions"]
    assert r.status == "FAIL" and r.seen == "min 0 of 2"
    assert "2 unmeasured rollouts neutralised" in r.detail


def test_leaked_held_out_games_are_caught(game_cache, monkeypatch):
    from skillos.evals import arms as experiment

    real = experiment.load_games
    monkeypatch.setattr(experiment, "load_games",
                        lambda cfg, split, n, progress=None: real(cfg, "valid_unseen", n))
    _, results = dry()
    r = results["splits-disjoint"]
    assert r.status == "FAIL" and 4 in r.gates


def test_not_enough_disk_is_refused(game_cache):
    _, results = dry(**{"training.checkpoint_gb": 1e7})
    r = results["disk"]
    assert r.status == "FAIL" and 7 in r.gates and "2 checkpoints" in r.expected


def test_an_unavailable_executor_is_a_one_line_error(game_cache):
    from skillos.errors import SkillosError

    with pytest.raises(SkillosError, match="needs a GPU machine with vllm installed"):
        dry(**{"executor.backend": "vllm", "executor.model": "tiny-qwen2"})


def test_a_launch_says_so_while_its_first_dry_run_generates_games(tmp_path, monkeypatch, skillos_home):
    """A cold cache: the dry-run generates the games (a minute or more at the quickstart's size);
    a launch prints only the gates' summary, yet says it is generating as it goes."""
    from skillos.ledger import Ledger

    monkeypatch.setenv("SKILLOS_CACHE", str(tmp_path / "cold"))
    cfg = config.load(QUICKSTART, ["env.n_games=4", "env.n_train_games=4"])
    lines = []
    with Ledger(skillos_home / "ledger.db") as ledger:
        gates.enforce(cfg, "eval", ledger, echo=lines.append)
    generating = [x for x in lines if "generating valid_unseen games for the dry-run" in x]
    assert generating and generating[-1].split(": ")[1].startswith("4/4"), lines
    assert lines.index(generating[0]) < next(i for i, x in enumerate(lines) if x.startswith("gates (eval)"))


def test_splits_disjoint_asks_the_trainers_own_probe_whether_a_rollout_loads_a_held_out_game(game_cache, monkeypatch):
    """Gate 4 plays the probe the trainer's registry entry names (the curator's: a training rollout
    reset on a held-out game); a rollout that loads one FAILs however disjoint the splits' hashes are."""
    from skillos.checking import Context
    from skillos.gates.dryrun import splits_disjoint
    from skillos.training.curator import env

    cfg = config.load(SMOKE)
    train = _scripted_games("train-", 6)
    assert env.refuses_game(cfg, train, _scripted_games("held-", 1)[0], object())
    assert not env.refuses_game(cfg, train, train[0], _Executor())  # a train game: loaded and played
    assert "training rollouts refuse held-out games" in splits_disjoint(Context(cfg)).detail
    monkeypatch.setattr(env, "refuses_game", lambda *a: False)  # a rollout that would play a held-out game
    result = splits_disjoint(Context(cfg))
    assert result.status == "FAIL" and "a training rollout could load a held-out game" in result.detail


class _Executor:
    name = "probe"

    def new_episode(self, task, skills):
        return self

    def act(self, observation, admissible):
        return "look"


def _scripted_games(prefix, n):
    from skillos.evals.envs.scripted import ScriptedGame

    return [ScriptedGame(f"{prefix}{i}") for i in range(n)]
