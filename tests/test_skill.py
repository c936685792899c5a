import pytest

from conftest import run_cli
from skillos.errors import SkillError
from skillos.repo import MAX_BODY_CHARS, SkillRepo, parse_skill, validate_path

GOOD = "---\nname: find-apples\ndescription: Where apples are found in a kitchen.\n---\n# Apples\nLook in the fridge.\n"


def write(folder, name, text):
    (folder / name).mkdir(parents=True, exist_ok=True)
    (folder / name / "SKILL.md").write_text(text)


def test_parse_good_skill_roundtrips():
    skill = parse_skill(GOOD)
    assert (skill.name, skill.description) == ("find-apples", "Where apples are found in a kitchen.")
    assert "fridge" in skill.body
    assert parse_skill(skill.to_markdown()) == skill


def test_long_description_stays_on_one_line():
    # the `skills` CLI reads frontmatter without folded scalars: never wrap a description
    description = ("word " * 150).strip()
    header = parse_skill(f"---\nname: a-b\ndescription: {description}\n---\nbody\n").to_markdown().split("---")[1]
    assert header.strip().splitlines() == ["name: a-b", f"description: {description}"]


@pytest.mark.parametrize("text, fragment", [
    ("---\nname: [unclosed\ndescription: x\n---\n", "invalid YAML"),
    ("---\ndescription: x\n---\nbody", "no 'name'"),
    ("---\nname: ok-name\n---\nbody", "no 'description'"),
    ("no frontmatter at all", "no YAML frontmatter"),
    ("---\nname: Bad_Name\ndescription: x\n---\n", "lowercase"),
    ("---\nname: -lead\ndescription: x\n---\n", "leading"),
    ("---\nname: double--hyphen\ndescription: x\n---\n", "single hyphens"),
    ("---\nname: ../x\ndescription: x\n---\n", "may not leave the repo folder"),
    ("---\nname: /etc/x\ndescription: x\n---\n", "may not leave the repo folder"),
    ("---\nname: " + "a" * 65 + "\ndescription: x\n---\n", "the limit is 64"),
    ("---\nname: ok\ndescription: ''\n---\n", "non-empty"),
    ("---\nname: ok\ndescription: x\nextra: 1\n---\n", "unknown frontmatter key 'extra'"),
    ("---\nname: ok\ndescription: x\n---\n" + "b" * (MAX_BODY_CHARS + 1), "body is"),
])
def test_bad_skill_files_get_one_line_errors(text, fragment):
    with pytest.raises(SkillError) as info:
        parse_skill(text, where="skills/x/SKILL.md")
    message = str(info.value)
    assert fragment in message and "\n" not in message and message.startswith("skills/x/SKILL.md")


def test_operations_refuse_bad_input_and_leave_repo_unchanged(tmp_path):
    repo = SkillRepo.load(tmp_path / "repo")
    assert repo.insert("apples", "Where apples are.", "fridge").ok
    before = sorted(p.read_text() for p in (tmp_path / "repo").rglob("*") if p.is_file())
    refused = [
        repo.insert("../escape", "x"),
        repo.insert("/etc/passwd", "x"),
        repo.insert("apples", "duplicate name"),
        repo.insert("big", "x", "b" * (MAX_BODY_CHARS + 1)),
        repo.insert("multi", "line\ndescription"),
        repo.update("missing", "x"),
        repo.update("apples", body="b" * (MAX_BODY_CHARS + 1)),
        repo.delete("../apples"),
        repo.delete("missing"),
    ]
    assert not any(r.ok for r in refused)
    assert all(r.reason and "\n" not in r.reason for r in refused)
    after = sorted(p.read_text() for p in (tmp_path / "repo").rglob("*") if p.is_file())
    assert after == before and [s.name for s in repo.skills] == ["apples"]
    assert not (tmp_path / "escape").exists()


def test_insert_update_delete_write_through(tmp_path):
    repo = SkillRepo(tmp_path)
    assert repo.insert("apples", "Where apples are.", "fridge").ok
    assert repo.update("apples", body="countertop").ok
    assert SkillRepo.load(tmp_path).get("apples").body.strip() == "countertop"
    assert repo.delete("apples").ok
    assert len(SkillRepo.load(tmp_path)) == 0 and not list(tmp_path.iterdir())


def test_validate_folder_reports_every_problem(tmp_path):
    write(tmp_path, "good", GOOD.replace("find-apples", "good"))
    write(tmp_path, "bad-yaml", "---\nname: [x\n---\n")
    write(tmp_path, "other-folder", GOOD)  # name differs from folder
    problems = validate_path(tmp_path)
    assert len(problems) == 2
    assert any("invalid YAML" in p for p in problems)
    assert any("differs from its folder" in p for p in problems)
    with pytest.raises(SkillError):
        SkillRepo.load(tmp_path)


def test_cli_validate_exit_codes(tmp_path):
    write(tmp_path, "find-apples", GOOD)
    ok = run_cli("skills", "validate", tmp_path)
    assert ok.returncode == 0 and "valid" in ok.stdout
    write(tmp_path, "broken", "---\nname: ../x\ndescription: y\n---\n")
    bad = run_cli("skills", "validate", tmp_path)
    assert bad.returncode == 1
    assert bad.stdout.strip().count("\n") == 0 and "leave the repo folder" in bad.stdout
    assert "Traceback" not in bad.stdout + bad.stderr
    missing = run_cli("skills", "validate", tmp_path / "nope")
    assert missing.returncode == 1 and "no such file" in missing.stdout
