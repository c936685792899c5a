"""The README is a map, not a manual: short, every command on it, every link landing on a file,
and every file of `docs/` reachable from it; the docs name paths of this repo that exist."""

import re
from pathlib import Path

import typer

from skillos.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_README_LINES = 250
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
# A backticked repo path: starts at one of the repo's own top-level folders, ends in a file type.
REPO_PATH = re.compile(r"`((?:evals|training|toolkit|ledger|skills|tests|docs|\.ci)/[\w./-]+"
                       r"\.(?:py|yaml|md|sh|json|toml))`")


def pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def broken_links(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    return [f"{page.name}: {target}" for target in LINK.findall(text)
            if "://" not in target and not (page.parent / target).exists()]


def missing_paths(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    return [f"{page.name}: {p}" for p in REPO_PATH.findall(text)
            if "*" not in p and "<" not in p and not (ROOT / p).exists()]


def commands() -> list[str]:
    return sorted(typer.main.get_command(app).commands)


def test_the_readme_is_a_map_of_at_most_250_lines():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines"
    text = "\n".join(lines)
    assert "skillos quickstart" in text and "python -m pytest" in text  # the two commands


def test_every_command_is_on_the_readme_map():
    text = README.read_text(encoding="utf-8")
    assert len(commands()) >= 15
    assert [c for c in commands() if f"`skillos {c}" not in text] == []


def test_every_link_lands_and_every_doc_is_linked_from_the_readme():
    assert [b for p in pages() for b in broken_links(p)] == []
    linked = {(README.parent / t).resolve() for t in LINK.findall(README.read_text(encoding="utf-8"))}
    assert [d.name for d in DOCS.glob("*.md") if d.resolve() not in linked] == []


def test_the_repo_paths_the_docs_name_exist():
    assert [m for p in pages() for m in missing_paths(p)] == []


def test_the_checks_can_fail(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("see [gone](docs/nowhere.md), [web](https://x.org/a) and `evals/nowhere.py`\n")
    assert broken_links(page) == ["page.md: docs/nowhere.md"]
    assert missing_paths(page) == ["page.md: evals/nowhere.py"]
