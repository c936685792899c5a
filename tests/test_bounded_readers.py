"""Every reader is bounded (class 4 of issue 24): transcript, task-file, dataset and run-folder
readers use skillos.safety's FIFO-safe, size-capped reads, so a FIFO, /dev/zero, a line longer than
the cap or a 200,000-deep JSON line is skipped and counted (or refused in one line where a damaged
file must not be half-read), never a hang, a memory blow-up or a RecursionError; and `--set`
values and a Config mutated in a notebook get the bounds and alias limits a YAML file gets."""

import json
import os
import threading

import pytest

from conftest import ROOT, run_cli
from sleep_fixtures import Claude
from skillos import safety
from skillos.config import ConfigError, SleepConfig, load, parse_set, revalidate
from skillos.errors import SkillosError

LONG = b'{"type": "user", "message": {"role": "user", "content": "' + b"x" * (safety.MAX_LINE_BYTES + 10) + b'"}}'
DEEP = b"[" * 200_000 + b"]" * 200_000


def hostile(tmp_path, kind: str, name: str):
    """A file called `name` that is a FIFO, a link to /dev/zero, or holds a long or deep line
    between two good ones."""
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "devzero":
        os.symlink("/dev/zero", path)
    else:
        good = json.dumps({"type": "note", "text": "fine"}).encode()
        path.write_bytes(good + b"\n" + (LONG if kind == "long" else DEEP) + b"\n" + good + b"\n")
    return path


def bounded(fn, seconds=60):
    """Run `fn` in a thread; fail (not hang) if it does not return in time."""
    out = {}

    def go():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "the reader hung"
    if "error" in out:
        raise out["error"]
    return out["value"]


KINDS = ["fifo", "devzero", "long", "deep"]
REASON = {"long": "line-too-long", "deep": "too-deep"}


@pytest.mark.parametrize("kind", KINDS)
def test_the_jsonl_reader_skips_and_counts_or_refuses(tmp_path, kind):
    path = hostile(tmp_path, kind, "x.jsonl")
    skips = safety.Skips()
    if kind in ("fifo", "devzero"):
        with pytest.raises(SkillosError, match="not a regular file"):
            bounded(lambda: list(safety.jsonl_records(path, "file", skips)))
        return
    rows = bounded(lambda: [r for _, _, r in safety.jsonl_records(path, "file", skips)])
    assert rows == [{"type": "note", "text": "fine"}] * 2
    assert skips.counts == {REASON[kind]: 1} and skips.places == [f"x.jsonl line 2: {REASON[kind]}"]


@pytest.mark.parametrize("kind", KINDS)
def test_harvest_skips_and_counts_a_hostile_transcript(tmp_path, kind):
    from skillos.training.textopt.sleep.harvest import harvest

    Claude("ok").user("Write the release notes for v1.2").assistant("done").write(tmp_path)
    project = next((tmp_path / ".claude" / "projects").iterdir())
    hostile(project, kind, "bad.jsonl")
    h = bounded(lambda: harvest(SleepConfig(claude_dir=str(tmp_path / ".claude"), codex_dir=str(tmp_path / ".codex"),
                                            sources=["claude"])))
    assert [s.id for s in h.sessions] == ["ok"]
    reason = "not-a-regular-file" if kind in ("fifo", "devzero") else REASON[kind]
    assert h.skipped.get(reason) == 1, h.skipped


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_task_file_is_one_line_error(tmp_path, kind):
    from skillos.training.textopt.sleep.mine import load_tasks

    path = hostile(tmp_path, kind, "tasks.jsonl")
    with pytest.raises(SkillosError) as err:
        bounded(lambda: load_tasks(path))
    assert "\n" not in str(err.value) and str(path) in str(err.value)


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_dataset_file_is_one_line_error(tmp_path, kind):
    from skillos.evals.envs.reasoning.datasets import load_hub

    folder = tmp_path / "Maxwell-Jia" / "AIME_2024"
    hostile(folder, kind, "aime.jsonl")
    with pytest.raises(SkillosError) as err:
        bounded(lambda: load_hub("aime24", tmp_path, 1, 0, 0))
    assert "\n" not in str(err.value) and "aime.jsonl" in str(err.value)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["games.jsonl", "trajectories.jsonl", "history.jsonl"])
def test_a_hostile_run_file_is_a_problem_on_the_viewer_page(tmp_path, kind, name):
    from skillos.view import Source

    runs = tmp_path / "runs"
    (runs / "r").mkdir(parents=True)
    (runs / "r" / "report.json").write_text("{}")
    hostile(runs / "r", kind, name)
    doc = bounded(lambda: Source(tmp_path / "home", runs).doc("run/r"))
    assert doc["kind"] == "run" and doc["problems"], doc
    if kind in ("long", "deep"):
        assert any("line 2" in p for p in doc["problems"])


@pytest.mark.parametrize("kind", KINDS)
def test_resume_refuses_a_hostile_row_file_in_one_line(tmp_path, kind):
    from skillos.evals.records import read_game_rows

    path = hostile(tmp_path, kind, "games.jsonl")
    with pytest.raises(SkillosError) as err:
        bounded(lambda: read_game_rows(path))
    assert "\n" not in str(err.value)


def test_a_partial_last_row_is_dropped_and_a_damaged_middle_row_refused(tmp_path):
    from skillos.evals.records import read_game_rows

    row = json.dumps({"arm": "a", "game_id": "g1", "success": True})
    path = tmp_path / "games.jsonl"
    path.write_text(row + "\n" + row[:20])  # killed mid-write
    assert [r["game_id"] for r in read_game_rows(path)] == ["g1"]
    path.write_text(row[:20] + "\n" + row + "\n")
    with pytest.raises(SkillosError, match="line 1"):
        read_game_rows(path)
    for bad in ({"arm": "a", "game_id": "g", "success": "yes"}, {"arm": "a", "game_id": 7, "success": True},
                {"arm": "a", "game_id": "g", "success": True, "schema_version": 99}):
        path.write_text(json.dumps(bad) + "\n")
        with pytest.raises(SkillosError):
            read_game_rows(path)


# -- --set and library calls ---------------------------------------------------------------------
BOMB = ("{a: &a [1,1,1,1,1,1,1,1,1,1], b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a], c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b], "
        "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c], e: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]}")
BAD_SETS = [
    ("divergences=" + BOMB, "nodes"),
    ("eval.arms=[&x no_memory, " + ", ".join(["*x"] * 101) + "]", "alias"),
    ("eval.arms=" + "[" * 200_000 + "]" * 200_000, "nested"),
    ("eval.arms=" + "[" * 150 + "]" * 150, "nested"),
    ("experiment.hypothesis=" + "x" * (safety.MAX_CONFIG_BYTES + 1), "bytes"),
    ("env=null", "section"),
    ("eval=~", "section"),
    ("env.n_games=1000000000", "between"),
    ("divergences={a: 1, a: 2}", "twice"),
]


@pytest.mark.parametrize("item, words", BAD_SETS, ids=[b[0][:30] for b in BAD_SETS])
def test_set_values_get_the_bounds_of_a_config_file(item, words):
    with pytest.raises(ConfigError) as err:
        bounded(lambda: load(ROOT / "evals" / "configs" / "quickstart.yaml", sets=[item]))
    assert words in str(err.value) and "\n" not in str(err.value) and len(str(err.value)) < 400


def test_set_on_the_command_line_is_one_line_and_exit_2(tmp_path):
    result = run_cli("gate", "check", ROOT / "evals" / "configs" / "quickstart.yaml", "--set", "env=null")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "env is a section" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def _mutations():
    cyclic = []
    cyclic.append(cyclic)
    shared = [1] * 10
    for _ in range(6):
        shared = [shared] * 10
    return [
        ("env.n_games", 10**9, "between"), ("env.n_games", "6", "expected int"), ("eval.arms", cyclic, "cycle"),
        ("divergences", {"k": {"value": shared, "reason": "r"}}, "nodes"), ("eval.alpha", float("nan"), "finite"),
        ("experiment.name", "../../etc", "letters"), ("eval.arms", ["closed_loop"], "control"),
        ("experiment.hypothesis", "x" * (safety.MAX_CONFIG_BYTES + 1), "characters"),
        ("eval.static_repo", "/no/such/folder", None),
    ]


@pytest.mark.parametrize("key, value, words", _mutations(), ids=[m[0] + "-" + str(i) for i, m in enumerate(_mutations())])
def test_a_config_mutated_in_a_notebook_is_checked_like_a_file(key, value, words):
    import skillos

    cfg = skillos.load(ROOT / "evals" / "configs" / "quickstart.yaml")
    section, _, leaf = key.rpartition(".")
    setattr(cfg if not section else getattr(cfg, section), leaf, value)
    if key == "eval.static_repo":
        cfg.eval.arms = ["no_memory", "static_repo"]
    with pytest.raises(ConfigError) as err:
        bounded(lambda: skillos.check(cfg))
    assert "\n" not in str(err.value) and (words is None or words in str(err.value))


def test_a_valid_config_passes_unchanged_through_the_check():
    cfg = load(ROOT / "evals" / "configs" / "quickstart.yaml", sets=["env.n_games=6"])
    again = revalidate(cfg)
    assert again.hash() == cfg.hash() and again.source == cfg.source and again is not cfg
    keys, value = parse_set("eval.arms=[no_memory, closed_loop]")
    assert keys == ["eval", "arms"] and value == ["no_memory", "closed_loop"]
