"""Official ALFWorld data ($ALFWORLD_DATA) plays through the same env class."""

import json
import shutil

import pytest

pytest.importorskip("alfworld", reason="needs the [alfworld] extra")

from conftest import run_cli  # noqa: E402
from skillos.evals.envs.alfworld import games  # noqa: E402
from skillos.evals.envs.alfworld.env import AlfworldEnv  # noqa: E402

pytestmark = pytest.mark.alfworld


@pytest.fixture()
def official(tmp_path, game_cache):
    """The official layout json_2.1.1/<split>/<task>/<trial>/, built from generated games."""
    pool = games.make_games("valid_unseen", 6, seed=0, cache_dir=game_cache)
    root = tmp_path / "alfworld"
    for i, game in enumerate(pool):
        folder = root / "json_2.1.1" / "valid_unseen" / f"{game.task_type}-{i}" / "trial_T0"
        folder.mkdir(parents=True)
        src = games.Path(game.path).parent
        shutil.copy(src / "traj_data.json", folder)
        data = json.loads((src / "game.tw-pddl").read_text())
        if i == 0:  # an official file that leaves the task to the loader
            data["grammar"] = data["grammar"].replace(game.task, "UNKNOWN GOAL")
        (folder / "game.tw-pddl").write_text(json.dumps(data))
    skipped = root / "json_2.1.1" / "valid_unseen" / "pick_and_place_with_movable_recep-x" / "t"
    shutil.copytree(root / "json_2.1.1" / "valid_unseen" / f"{pool[1].task_type}-1" / "trial_T0", skipped)
    unsolvable = root / "json_2.1.1" / "valid_unseen" / "unsolvable" / "t"
    shutil.copytree(root / "json_2.1.1" / "valid_unseen" / f"{pool[2].task_type}-2" / "trial_T0", unsolvable)
    data = json.loads((unsolvable / "game.tw-pddl").read_text())
    (unsolvable / "game.tw-pddl").write_text(json.dumps({**data, "solvable": False}))
    return root, pool


def test_official_layout_is_collected_like_alfredtwenv(official):
    root, pool = official
    found = games.load_official(root, "valid_unseen")
    assert len(found) == 6  # movable and unsolvable games skipped
    env = AlfworldEnv()
    first = next(g for g in found if g.id.startswith(f"{pool[0].task_type}-0"))
    env.load(first.path)
    obs = env.reset()
    assert "UNKNOWN GOAL" not in obs.text and env.task  # filled from traj_data
    walkthrough = json.loads(open(first.path).read())["walkthrough"]
    for command in walkthrough:
        obs = env.step(command)
    assert obs.won


def test_eval_on_official_data(official, tmp_path, game_cache):
    root, _ = official
    config = tmp_path / "c.yaml"
    config.write_text("env: {data: official, n_games: 4, n_train_games: 0}\n")
    env = {"ALFWORLD_DATA": str(root), "SKILLOS_CACHE": str(game_cache)}
    result = run_cli("eval", config, "--json", "--out", tmp_path / "run", env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout)["arms"]["no_memory"]["attempted"] == 4
    missing = run_cli("eval", config, "--out", tmp_path / "run2", env={"ALFWORLD_DATA": ""})
    assert missing.returncode == 2 and "ALFWORLD_DATA is not set" in missing.stderr


def test_empty_alfworld_data_is_a_clear_error(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("env: {n_games: 2, n_train_games: 0}\n")
    result = run_cli("eval", config, "--out", tmp_path / "run", env={"ALFWORLD_DATA": ""})
    assert result.returncode == 2 and "ALFWORLD_DATA is set but empty" in result.stderr
    assert "Traceback" not in result.stderr
