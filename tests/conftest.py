import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args, env=None, cwd=None):
    """Run the real `skillos` console entry point in a subprocess."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "skillos", *map(str, args)], capture_output=True,
                          text=True, env=full_env, cwd=cwd, timeout=900)


@pytest.fixture(scope="session")
def game_cache(tmp_path_factory):
    """One cache of generated games (and translations) shared by the tests of a session."""
    path = tmp_path_factory.mktemp("games")
    before = os.environ.get("SKILLOS_CACHE")
    os.environ["SKILLOS_CACHE"] = str(path)
    yield path
    if before is None:
        del os.environ["SKILLOS_CACHE"]
    else:
        os.environ["SKILLOS_CACHE"] = before


@pytest.fixture(autouse=True)
def skillos_home(tmp_path, monkeypatch):
    """Every test gets its own ledger folder; nothing is written under the repo."""
    home = tmp_path / "skillos-home"
    monkeypatch.setenv("SKILLOS_HOME", str(home))
    return home


@pytest.fixture(scope="session")
def tiny_curator(game_cache, tmp_path_factory):
    """The tiny local model (built into the session cache) after the format warm-up: a real
    transformers model that emits well-formed curate_and_advance calls (~15 s to make)."""
    from skillos.evals.curation import TOOL_SURFACES
    from skillos.training.warmup import curator_examples, warm_up

    return warm_up("tiny-qwen2", curator_examples(), TOOL_SURFACES["curate_and_advance"],
                   tmp_path_factory.mktemp("tiny-curator"))
