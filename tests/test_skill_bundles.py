"""The agent skill bundles in skills/: valid Agent Skills, every command they name exists with
the flags they use, and the real `skills` CLI (npm) installs them and an exported curated repo
for Claude Code."""

import re
import shutil
import subprocess

import pytest
from typer.testing import CliRunner

from conftest import ROOT, run_cli
from skillos import cli
from skillos.repo import SkillRepo

BUNDLES = ["skillos-benchmark", "skillos-launch", "skillos-postmortem", "skillos-sleep", "skillos-train"]
# skills >= 1.6 needs Node >= 22.20 and does not start on this machine's Node 20; 1.5.26 does.
SKILLS_CLI = "skills@1.5.26"


def test_the_bundles_are_valid_agent_skills():
    repo = SkillRepo.load(ROOT / "skills")
    assert [s.name for s in repo.skills] == BUNDLES
    for name in BUNDLES:
        text = (ROOT / "skills" / name / "SKILL.md").read_text()
        head = text.split("---")[1]
        assert re.search(r"^name: \S+$", head, re.M) and re.search(r'^description: "[^"\n]+"$', head, re.M)
        assert len(text.splitlines()) < 500
    assert not list((ROOT / "skills").rglob("__init__.py"))


def _commands():
    """Every `skillos ...` command in the bundles' code spans: its subcommand words and flags."""
    found = set()
    for path in (ROOT / "skills").rglob("*.md"):
        for span in re.findall(r"`(skillos [^`]+)`", path.read_text()):
            words = span.split()[1:]
            sub = []
            for word in words:
                if not re.fullmatch(r"[a-z][a-z-]*", word):
                    break
                sub.append(word)
            flags = tuple(sorted({w.split("=")[0] for w in words if w.startswith("--")}))
            found.add((tuple(sub), flags, path.parent.name))
    return sorted(found)


def test_every_command_a_bundle_names_exists_with_its_flags():
    commands = _commands()
    assert len(commands) > 20
    runner = CliRunner()
    for sub, flags, where in commands:
        # the longest prefix of words that is a command: the rest are arguments (e.g. CONFIG)
        for n in range(len(sub), 0, -1):
            result = runner.invoke(cli.app, [*sub[:n], "--help"], terminal_width=200)
            if result.exit_code == 0 and "Usage:" in result.output:
                break
        assert result.exit_code == 0, f"{where}: skillos {' '.join(sub)} does not exist"
        for flag in flags:
            assert re.search(re.escape(flag) + r"(?![\w-])", result.output), \
                f"{where}: skillos {' '.join(sub[:n])} has no {flag}"


npx = pytest.mark.skipif(shutil.which("npx") is None, reason="node/npm (npx) are not installed here")


def _install(source, project):
    project.mkdir()
    return subprocess.run(["npx", "-y", SKILLS_CLI, "add", str(source), "--skill", "*", "-a", "claude-code", "-y"],
                          cwd=project, capture_output=True, text=True, timeout=600)


@npx
def test_npx_skills_add_installs_the_bundles_for_claude_code(tmp_path):
    result = _install(ROOT, tmp_path / "project")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    installed = tmp_path / "project" / ".claude" / "skills"
    assert sorted(p.name for p in installed.iterdir()) == BUNDLES
    assert [s.name for s in SkillRepo.load(installed).skills] == BUNDLES  # frontmatter still validates
    assert (installed / "skillos-launch" / "references" / "reading-a-report.md").is_file()


@npx
def test_an_exported_curated_repo_installs_the_same_way(tmp_path):
    curated = tmp_path / "curated"
    repo = SkillRepo(curated)
    repo.insert("where-to-find-mug", "Where mugs were found: countertops first, then cabinets.", "- countertop 1")
    repo.insert("put-a-clean-x-in-y", "Clean it at the sinkbasin, then place it.", "1. take x\n2. clean x")
    result = run_cli("skills", "export", curated, tmp_path / "bundle")
    assert result.returncode == 0, result.stderr
    again = run_cli("skills", "export", curated, tmp_path / "bundle")
    assert again.returncode == 2 and "not empty" in again.stderr
    installed = _install(tmp_path / "bundle", tmp_path / "project")
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-2000:]
    skills = SkillRepo.load(tmp_path / "project" / ".claude" / "skills")
    assert [s.name for s in skills.skills] == ["put-a-clean-x-in-y", "where-to-find-mug"]
    assert skills.get("where-to-find-mug").description.startswith("Where mugs were found: countertops")
