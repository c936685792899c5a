"""A killed eval resumes exactly: kill -9 mid-run, then --resume gives the rows of an
uninterrupted run, each game once, no gaps; a non-empty --out is refused without a flag."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from conftest import ROOT, run_cli

pytest.importorskip("alfworld", reason="needs the [alfworld] extra")
pytestmark = pytest.mark.alfworld
SIZE = ["--n-games", "6", "--n-train-games", "6"]
KEYS = ("success", "steps", "coerced_actions", "skills_retrieved", "repo_size", "unmeasured")


def rows(out):
    found = {}
    for name in ("games.jsonl", "curation.jsonl"):
        for line in (out / name).read_text().splitlines():
            r = json.loads(line)
            key = (r["arm"], r["phase"], r["game_id"])
            assert key not in found, f"{key} recorded twice"
            found[key] = {k: r[k] for k in KEYS}
    return found


@pytest.fixture(scope="module")
def sequential(tmp_path_factory, game_cache):
    """A config whose arms run in turn (so a kill lands inside one arm) and its rows uninterrupted."""
    folder = tmp_path_factory.mktemp("resume")
    data = yaml.safe_load((ROOT / "evals" / "configs" / "quickstart.yaml").read_text())
    data["eval"]["workers"] = 1
    config = folder / "c.yaml"
    config.write_text(yaml.safe_dump(data))
    result = run_cli("eval", config, *SIZE, "--out", folder / "reference",
                     env={"SKILLOS_HOME": str(folder / "home")})
    assert result.returncode == 0, result.stderr[-2000:]
    return config, rows(folder / "reference")


# kill inside closed_loop's train curation, and inside its held-out games
@pytest.mark.parametrize("kill_at", [("curation.jsonl", 2), ("games.jsonl", 9)])
def test_kill_9_then_resume_gives_the_same_rows(tmp_path, game_cache, sequential, kill_at,
                                                skillos_home):
    config, reference = sequential
    env = {**os.environ, "SKILLOS_CACHE": str(game_cache)}

    killed = tmp_path / "killed"
    job = subprocess.Popen([sys.executable, "-m", "skillos", "eval", str(config), *SIZE, "--out",
                            str(killed)], env=env, start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    watched, lines = killed / kill_at[0], 0
    deadline = time.monotonic() + 300
    while lines < kill_at[1] and job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
        lines = len(watched.read_text().splitlines()) if watched.exists() else 0
    os.killpg(job.pid, signal.SIGKILL)
    job.wait()
    assert lines >= kill_at[1], "the run ended before it could be killed"

    refused = run_cli("eval", config, *SIZE, "--out", killed)
    assert refused.returncode == 2 and "--resume to continue it" in refused.stderr
    resumed = run_cli("eval", config, *SIZE, "--out", killed, "--resume")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert rows(killed) == reference
    assert len(reference) == 6 + 6 + 6
    from skillos.ledger import Ledger

    with Ledger(skillos_home / "ledger.db") as ledger:
        runs = ledger.rows("runs")
    assert [r["status"] for r in runs] == ["interrupted"] * 2 + ["finished"] * 2
    assert "resumed from" in runs[0]["detail"]


def test_resume_refuses_a_different_config(tmp_path, game_cache):
    out = tmp_path / "run"
    config = ROOT / "evals" / "configs" / "quickstart.yaml"
    assert run_cli("eval", config, "--n-games", "4", "--n-train-games", "4", "--out", out).returncode == 0
    other = run_cli("eval", config, *SIZE, "--out", out, "--resume")
    assert other.returncode == 2 and "config.yaml differs" in other.stderr
    again = run_cli("eval", config, "--n-games", "4", "--n-train-games", "4", "--out", out,
                    "--overwrite", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["arms"]["no_memory"]["attempted"] == 4
