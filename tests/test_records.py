"""Typed records: the per-game row, the arm summary and the eval report round-trip through
to_dict / from_dict; every new JSONL row carries schema_version; rows written before it still read."""

from skillos import config
from skillos.evals import report
from skillos.evals.records import SCHEMA_VERSION, ArmSummary, EvalReport, GameRow
from skillos.evals.runner import row
from skillos.evals.trajectory import Step, Trajectory


def test_a_new_row_carries_its_schema_version_and_round_trips():
    traj = Trajectory("g1", "put a mug in the fridge", "pick", steps=[Step("look", "You see a mug.")],
                      won=True, retrieved=["mugs"])
    data = row("closed_loop", traj, 3)
    assert data["schema_version"] == SCHEMA_VERSION and data["success"] is True and data["unmeasured"] is False
    assert GameRow.from_dict(data).to_dict() == data


def test_a_row_written_before_the_schema_version_still_reads():
    old = {"arm": "no_memory", "game_id": "g2", "success": None, "steps": 4, "coerced_actions": 1,
           "future_key": "kept"}
    parsed = GameRow.from_dict(old)
    assert parsed.schema_version == 0 and parsed.phase == "eval" and parsed.unmeasured is True
    assert parsed.to_dict()["future_key"] == "kept"  # a key this version does not know survives


def test_the_eval_report_round_trips(tmp_path):
    rows = [GameRow(arm=arm, game_id=f"g{i}", success=(i < wins), task_type="pick").to_dict()
            for arm, wins in (("no_memory", 2), ("closed_loop", 5)) for i in range(8)]
    cfg = config.from_dict({"eval": {"bootstrap": 200}})
    built = report.build(cfg, {arm: [r for r in rows if r["arm"] == arm] for arm in ("no_memory", "closed_loop")},
                         tmp_path, n_train=0)
    typed = EvalReport.from_dict(built)
    assert isinstance(typed.arms["closed_loop"], ArmSummary) and typed.arms["closed_loop"].successes == 5
    assert typed.to_dict() == built
