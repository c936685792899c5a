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


SPAN = re.compile(r"`([^`]+)`")
# a module named in a table with the names it holds: `evals/stats.py` (`compare`, `verdicts`)
NAMED = re.compile(r"`((?:evals|training|toolkit|ledger|skills|tests)/[\w./-]+\.py)` \(([^)]*)\)")
FILE_TYPES = (".py", ".yaml", ".md", ".json", ".png", ".csv", ".jsonl", ".html", ".db", ".toml")


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


def stale_table_names(page: Path) -> list[str]:
    """In the docs' tables: each config key (`training.max_turn_tokens`) the schema no longer has,
    and each name a module is said to hold (`training/curator/reward.py` (`task_reward`)) that it does not."""
    from skillos.config.schema import SECTIONS, Config

    out = []
    for line in page.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            continue
        for span in SPAN.findall(line):
            key = re.split(r"[\s:=\[(]", span, maxsplit=1)[0].removesuffix(".*")
            if "." in key and key.split(".")[0] in SECTIONS and not key.endswith(FILE_TYPES) \
                    and not _in_schema(Config(), key):
                out.append(f"{page.name}: config key {key}")
        for path, inner in NAMED.findall(line):
            source = (ROOT / path).read_text(encoding="utf-8") if (ROOT / path).is_file() else ""
            out += [f"{page.name}: {path} has no {name}" for name in SPAN.findall(inner)
                    if re.fullmatch(r"[A-Za-z_]\w*", name) and not re.search(rf"\b{name}\b", source)]
    return out


def _in_schema(node, key: str) -> bool:
    for part in key.split("."):
        if isinstance(node, dict):  # a mapping key (compute.servers.executor): the schema has no list of them
            return True
        if not hasattr(node, part):
            return False
        node = getattr(node, part)
    return True


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


def test_every_key_and_name_the_docs_tables_cite_still_exists():
    assert [m for p in pages() for m in stale_table_names(p)] == []


def test_the_checks_can_fail(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("see [gone](docs/nowhere.md), [web](https://x.org/a) and `evals/nowhere.py`\n"
                    "| a point | `training.max_turn_tokens`, `training.max_turns`, `compute.servers.executor` | ok |\n"
                    "| a point | `training/curator/reward.py` (`task_reward`, `gone_reward`) | ok |\n")
    assert broken_links(page) == ["page.md: docs/nowhere.md"]
    assert missing_paths(page) == ["page.md: evals/nowhere.py"]
    assert stale_table_names(page) == ["page.md: config key training.max_turns",
                                       "page.md: training/curator/reward.py has no gone_reward"]


def test_the_fidelity_counts_are_the_tables():
    """docs/fidelity.md's counts line says, per seed, what its table's rows say."""
    text = (DOCS / "fidelity.md").read_text(encoding="utf-8")
    stated = dict(re.findall(r"\*\*([^*]+?) (\d+ / \d+ / \d+)\*\*", text))
    counted = {}
    for section in text.split("\n## ")[1:]:
        title = section.split("\n", 1)[0]
        rows = [line for line in section.splitlines() if line.startswith("| ") and "method point" not in line]
        verdicts = [line.rstrip(" |").split(" | ")[-1].strip().split()[0].rstrip(":,") for line in rows]
        counted[title] = " / ".join(str(verdicts.count(v)) for v in ("faithful", "different", "missing"))
    assert {title.lower(): n for title, n in stated.items()} == {title.lower(): n for title, n in counted.items()}
