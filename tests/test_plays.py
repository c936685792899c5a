"""Plays kept by what decides them (training/curator/plays.py): a deterministic executor's play of a game
with a repo is handed back the next time, a different repo, game or executor plays again, a fault
is never kept, and a rollout's input is the same either way."""

from dataclasses import dataclass

import pytest

from skillos.evals.trajectory import Step, Trajectory
from skillos.repo import SkillRepo
from skillos.training.curator import plays


@dataclass
class G:
    id: str
    path: str = ""


class Exec:
    name = "det"
    deterministic = True


class Sampler:
    name = "sampler"  # an LLM at temperature > 0: never kept


def repo(*bodies) -> SkillRepo:
    r = SkillRepo(None)
    for i, body in enumerate(bodies):
        r.insert(f"s{i}", "d", body)
    return r


@pytest.fixture(autouse=True)
def fresh():
    plays.clear()
    yield
    plays.clear()


def counter(won=True):
    calls = []

    def play():
        calls.append(1)
        return Trajectory("g", "t", "x", steps=[Step("look", "ok")], won=won)

    return play, calls


def test_a_deterministic_play_is_kept_and_anything_that_decides_it_plays_again():
    play, calls = counter()
    args = ("bm25", 30, 5)
    first = plays.play(play, G("g1"), Exec(), repo("Heat it."), *args)
    again = plays.play(play, G("g1"), Exec(), repo("Heat it."), *args)
    assert len(calls) == 1 and again.steps == first.steps and again is not first
    plays.play(play, G("g1"), Exec(), repo("Cool it."), *args)  # another repo
    plays.play(play, G("g2"), Exec(), repo("Heat it."), *args)  # another game
    plays.play(play, G("g1"), Exec(), repo("Heat it."), "bm25", 20, 5)  # another step budget
    assert len(calls) == 4 and plays.counts == {"hits": 1, "plays": 4}


def test_a_sampling_executor_and_a_fault_are_never_kept():
    play, calls = counter()
    for _ in range(2):
        plays.play(play, G("g1"), Sampler(), repo(), "bm25", 30, 5)
    lost, lost_calls = counter(won=None)
    for _ in range(2):
        assert plays.play(lost, G("g1"), Exec(), repo(), "bm25", 30, 5).won is None
    assert len(calls) == 2 and len(lost_calls) == 2


def test_a_kept_play_gives_the_curator_the_same_input_on_the_real_engine(game_cache):
    pytest.importorskip("alfworld", reason="needs the [alfworld] extra")
    from skillos.config.loading import load
    from skillos.evals.envs.alfworld.games import make_games
    from skillos.training.curator.env import CuratorEnv, make_setup

    from conftest import ROOT

    cfg = load(ROOT / "training" / "configs" / "canary-curator.yaml")
    games = make_games("valid_seen", 6, 0, types=cfg.env.task_types)
    setup = make_setup(cfg, games)
    assert setup.keep_plays  # the household engine with the heuristic executor
    ids = [g.id for g in games if g.task_type == games[0].task_type][:3]
    ops = [{"op": "insert", "skill_name": "microwave-first", "content": "Heat the X with the microwave."}]
    texts = []
    for keep in (False, True, True):
        setup.keep_plays = keep
        env = CuratorEnv(setup)
        texts.append((env.reset(game_ids=ids, task_type=games[0].task_type), env.curate_and_advance(ops)))
    assert texts[0] == texts[1] == texts[2] and plays.counts["hits"] == 2
