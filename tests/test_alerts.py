"""Gate refusals and canary verdicts as trackio alerts when training.report_to names trackio: the
real trackio, writing its local project database, read back with SQLite; a config that does not
report to trackio sends nothing (the control)."""

import json
import sqlite3
import subprocess
import sys

from conftest import ROOT, run_cli

SMOKE = ROOT / "training" / "configs" / "cpu-smoke.yaml"


def alerts(folder, project: str) -> list[dict]:
    db = folder / f"{project}.db"
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM alerts")]


def test_a_refused_launch_is_an_error_alert_only_where_it_reports_to_trackio(tmp_path, skillos_home):
    env = {"SKILLOS_HOME": str(skillos_home), "TRACKIO_DIR": str(tmp_path / "trackio")}
    stale = "training.learning_rate=0.5"  # away from the declared divergence: gate 1 refuses the launch
    refused = run_cli("train", SMOKE, "--set", stale, "--set", "training.report_to=trackio", "--json", env=env)
    assert refused.returncode == 1 and "refused by the launch gates" in refused.stderr
    (alert,) = alerts(tmp_path / "trackio", "cpu-smoke")
    assert alert["level"] == "error" and "train refused by the launch gates" in alert["title"]
    assert "training.learning_rate" in alert["text"]
    assert not refused.stdout.strip() or json.loads(refused.stdout)  # trackio's chatter stays off stdout
    quiet = run_cli("train", SMOKE, "--set", stale, "--set", "training.report_to=tensorboard", env={
        **env, "TRACKIO_DIR": str(tmp_path / "none")})
    assert quiet.returncode == 1 and not (tmp_path / "none").exists()


def test_a_canary_verdict_is_an_alert(tmp_path):
    code = """
import json, sys
from skillos import config
from skillos.ledger.store import canary_passed
from skillos.training.canary import Measured, alert_verdict, judged_result
cfg = config.with_sets(config.validate(config.Config()), ["experiment.name=canary-x", "training.report_to=trackio"])
tasks = [f"t{i}" for i in range(10)]
same = {t: i < 3 for i, t in enumerate(tasks)}  # training moved nothing: the canary fails
result = {**judged_result([Measured("m", same, dict(same), dict(same), flipped_after=dict(same), seed=0)], None),
          "trainer": "curator", "wall_s": 1.0, "code_hash": "c0de", "machine": "cpu"}
result["passed"] = canary_passed(result)
print(json.dumps(alert_verdict(cfg, result, lambda line: None)))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "TRACKIO_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-800:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["sent"] is True
    (alert,) = alerts(tmp_path, "canary-x")
    assert alert["level"] == "error" and alert["title"] == "canary curator: FAIL"
