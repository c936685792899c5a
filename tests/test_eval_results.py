"""Hugging Face .eval_results out: one YAML file per arm, read back with huggingface_hub's own
parser of the format, with the denominators and the paired comparison in notes."""

import json

import yaml
from conftest import run_cli
from huggingface_hub import parse_eval_result_entries
from test_skill_creator import _run_folder

from skillos.evals.eval_results import export_eval_results


def test_each_arm_is_one_file_the_hub_parser_reads(tmp_path):
    run = _run_folder(tmp_path)
    result = export_eval_results(run, tmp_path / "model", dataset="org/alfworld", task="valid_unseen",
                                 source_url="https://example.org/run")
    folder = tmp_path / "model" / ".eval_results"
    assert sorted(p.name for p in folder.iterdir()) == ["alfworld.yaml", "alfworld_closed_loop.yaml"]
    control = parse_eval_result_entries(yaml.safe_load((folder / "alfworld.yaml").read_text()))
    treated = parse_eval_result_entries(yaml.safe_load((folder / "alfworld_closed_loop.yaml").read_text()))
    assert len(control) == len(treated) == 1
    c, t = control[0], treated[0]
    assert (c.dataset_id, c.task_id, c.value) == ("org/alfworld", "valid_unseen", 30.0)
    assert t.value == round(100 * 7 / 9, 2)  # over its 9 measured games, never counting the unmeasured one as lost
    assert t.source_url == "https://example.org/run" and t.date and t.source_name
    assert "7/9 measured games won, 1 unmeasured" in t.notes and "b/c 4/0" in t.notes and "verdict:" in t.notes
    assert "the control" in c.notes and "3/10 measured games won, 0 unmeasured" in c.notes
    assert result["control"] == "no_memory"


def test_an_arm_with_nothing_measured_gets_no_file_and_says_why(tmp_path):
    run = _run_folder(tmp_path)
    rows = [json.loads(line) for line in (run / "games.jsonl").read_text().splitlines()]
    for r in rows:
        if r["arm"] == "closed_loop":
            r.update(success=None, unmeasured=True, unmeasured_reason="outage")
    (run / "games.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = run_cli("export", "eval-results", run, tmp_path / "model", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert list(result["files"]) == ["no_memory"] and "no measured game" in result["skipped"]["closed_loop"]
    bad = run_cli("export", "eval-results", tmp_path / "nowhere", tmp_path / "model")
    assert bad.returncode != 0 and "no games.jsonl" in bad.stderr and "Traceback" not in bad.stderr


def test_a_second_run_exported_into_the_same_folder_leaves_no_file_of_the_first(tmp_path):
    """The folder holds one run: an earlier export's arm this run lacks (or cannot measure) is removed
    and said; a file of the benchmark skillos did not write is a refusal before anything is written."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _run_folder(tmp_path / "a")
    export_eval_results(first, tmp_path / "model", dataset="org/alfworld")
    folder = tmp_path / "model" / ".eval_results"
    second = _run_folder(tmp_path / "b")
    rows = [json.loads(line) for line in (second / "games.jsonl").read_text().splitlines()]
    for r in rows:
        if r["arm"] == "closed_loop":
            r.update(success=None, unmeasured=True, unmeasured_reason="outage")
    (second / "games.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = export_eval_results(second, tmp_path / "model", dataset="org/alfworld")
    assert sorted(p.name for p in folder.iterdir()) == ["alfworld.yaml"]
    assert result["removed"] == [str(folder / "alfworld_closed_loop.yaml")]
    (folder / "alfworld_theirs.yaml").write_text(yaml.safe_dump([{"source": {"name": "another tool"}}]))
    import pytest

    from skillos.errors import SkillosError

    before = (folder / "alfworld.yaml").read_text()
    with pytest.raises(SkillosError, match="alfworld_theirs.yaml: a result of benchmark alfworld that skillos did "):
        export_eval_results(first, tmp_path / "model", dataset="org/alfworld")
    assert (folder / "alfworld.yaml").read_text() == before  # refused before anything was written
