"""Games in flight at once: the same rows as one at a time, waves curate on one snapshot, and an
outage still aborts the arm with nothing scored as a failure."""

from dataclasses import replace

import pytest

from llm_server import ScriptedLLM

PLAY = dict(retrieval_mode="bm25", max_steps=30, top_k=5, concurrency=1, wave_size=1)

pytest.importorskip("alfworld", reason="needs the [alfworld] extra")
pytestmark = pytest.mark.alfworld


@pytest.fixture
def games(game_cache):
    from skillos.evals.envs.alfworld.games import make_games

    return make_games("valid_unseen", 6, 0)


def arm(games, **kw):
    from skillos.evals.envs.household.heuristic import HeuristicExecutor
    from skillos.evals.envs.alfworld.env import AlfworldEnv
    from skillos.evals.runner import run_arm

    return run_arm("a", games, env=AlfworldEnv(), make_env=AlfworldEnv, executor=HeuristicExecutor(),
                   **{"repo": None, **PLAY, **kw})


def test_concurrent_games_give_the_rows_of_sequential_ones(games, tmp_path):
    sequential = arm(games)
    concurrent = arm(games, concurrency=4, out=tmp_path / "rows.jsonl")
    assert concurrent == sequential and [r["game_id"] for r in concurrent] == [g.id for g in games]
    assert len((tmp_path / "rows.jsonl").read_text().splitlines()) == 6


def test_a_wave_plays_on_one_repo_snapshot_then_curates_in_order(games):
    from skillos.evals.envs.household.heuristic import HeuristicCurator
    from skillos.repo import SkillRepo

    repo = SkillRepo(None)
    rows = arm(games, repo=repo, curator=HeuristicCurator(), concurrency=3, wave_size=3)
    assert [r["repo_size"] for r in rows[:3]] == sorted(r["repo_size"] for r in rows[:3])
    assert all(r["skills_retrieved"] == [] for r in rows[:3])  # the first wave saw the empty repo
    assert len(repo) == rows[-1]["repo_size"] > 0


def test_an_outage_with_games_in_flight_aborts_and_scores_nothing(games, monkeypatch):
    from skillos.config import BackendConfig
    from skillos.evals.envs.household.llm import LLMExecutor
    from skillos.evals.envs.alfworld.env import AlfworldEnv
    from skillos.evals.runner import ArmAborted, run_arm

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    plays = [replace(g, id=f"{g.id}#{i}") for i in range(6) for g in games]  # 36
    rows = []
    with ScriptedLLM() as server:
        server.outage = True
        executor = LLMExecutor(BackendConfig(backend="openai", model="m", base_url=server.openai_url,
                                             max_retries=0))
        with pytest.raises(ArmAborted, match="20 of 20 games unmeasured"):
            run_arm("llm", plays, env=AlfworldEnv(), make_env=AlfworldEnv, executor=executor,
                    repo=None, **{**PLAY, "concurrency": 8}, max_error_rate=0.02, on_game=rows.append)
    assert len(rows) == 20 and all(r["success"] is None for r in rows)
