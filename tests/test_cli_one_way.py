"""The CLI prints one way: every result goes through `cli_common.emit` (JSON through the redacting
printer, text lines redacted too), the options several commands share are defined once in
`cli_common`, every terminal rendering lives in `cli_render`, and `eval` / `quickstart` share
one function."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = sorted((ROOT / "toolkit").glob("cli*.py"))
COMMON, RENDER = ROOT / "toolkit" / "cli_common.py", ROOT / "toolkit" / "cli_render.py"


def _functions(path: Path) -> dict:
    return {n.name: n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)}


def _calls(node: ast.AST) -> set:
    return {n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", None)
            for n in ast.walk(node) if isinstance(n, ast.Call)}


def test_json_is_printed_only_by_emit():
    emit_source = ast.get_source_segment(COMMON.read_text(), _functions(COMMON)["emit"])
    for path in CLI:
        text = path.read_text().replace(emit_source, "") if path == COMMON else path.read_text()
        for printing in ("print(json.dumps(", "echo(json.dumps(", "print_json(", "stdout.write(json"):
            assert printing not in text, f"{path.name} prints JSON itself ({printing}); use cli_common.emit"
        assert "json_text(" not in text, f"{path.name} formats JSON output itself; use cli_common.emit"
    assert [p.name for p in CLI if "def emit(" in p.read_text()] == ["cli_common.py"]
    assert "json_text" in _calls(_functions(COMMON)["emit"])


def test_shared_options_are_defined_once():
    for flag in ("--json", "--set", "--override", "--out", "--resume", "--overwrite", "--home", "--runs"):
        where = [p.name for p in CLI if re.search(rf'typer\.Option\([^)]*"{flag}"', p.read_text())]
        assert where == ["cli_common.py"], f"{flag} is defined in {where}"


def test_renderers_live_in_cli_render():
    for path in CLI:
        if path == RENDER:
            continue
        for name in _functions(path):
            assert not re.fullmatch(r"_?(lines|render|\w+_lines?)", name), \
                f"{path.name} defines the renderer {name}; it belongs in cli_render.py"


def test_eval_and_quickstart_share_one_function():
    functions = _functions(ROOT / "toolkit" / "cli.py")
    for command in ("eval_cmd", "quickstart"):
        calls = _calls(functions[command])
        assert "_evaluate" in calls and "evaluate" not in calls, command
    assert "evaluate" in _calls(functions["_evaluate"])


def test_emit_redacts_json_and_text_lines(monkeypatch, capsys):
    """A key in a result reaches neither the --json output nor the text lines."""
    from skillos.cli_common import emit

    key = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    for as_json in (True, False):
        emit({"reason": f"failed with {key}"}, as_json, lambda d: [d["reason"]])
        shown = capsys.readouterr().out
        assert key not in shown and "failed with" in shown
