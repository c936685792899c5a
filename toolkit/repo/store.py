"""The skill repo on disk: a folder of `<name>/SKILL.md` files, edited only through
insert / update / delete, each written atomically (temp file + fsync + rename).

A crash mid-write leaves every SKILL.md either as it was or as it became, never half-written,
and a failed operation leaves the repo (memory and disk) unchanged.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from skillos.errors import SkillError
from skillos.files import write_atomic
from skillos.repo.skill import Skill, parse_skill, validate_name
from skillos.errors import SkillosError
from skillos.safety import MAX_SKILL_BYTES, read_text

SKILL_FILE = "SKILL.md"


@dataclass(frozen=True)
class OpResult:
    """The outcome of one curator operation: ok, or a one-line reason it was refused."""

    ok: bool
    op: str
    name: str
    reason: str = ""


def _skill_files(root: Path) -> list[Path]:
    return sorted(p for p in root.glob(f"*/{SKILL_FILE}") if not p.parent.name.startswith("."))


def _escapes(file: Path, root: Path) -> bool:
    """A skill folder or file that is a symlink resolving outside the repo (never followed)."""
    try:
        file.resolve().relative_to(root.resolve())
        return False
    except ValueError:
        return True


def read_skill_file(file: Path) -> str:
    """A SKILL.md's text: a regular file, size-capped before parsing (never a FIFO or a folder)."""

    try:
        return read_text(file, MAX_SKILL_BYTES, SKILL_FILE)
    except SkillosError as exc:
        raise SkillError(str(exc)) from None


def validate_path(path: str | Path, empty_ok: bool = False) -> list[str]:
    """Every problem with a SKILL.md file or a repo folder, one line each (empty: valid). A folder
    with no SKILL.md at all is a problem unless `empty_ok` (a repo a curator has yet to fill)."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return [f"{path}: no such file or folder"]
    if not path.is_dir():
        files, root = [path], path.parent
    else:
        files, root = _skill_files(path), path
        if not files and path.name != "" and (path / SKILL_FILE).exists():
            files, root = [path / SKILL_FILE], path  # a single skill folder
        if not files and not empty_ok:
            return [f"{path}: no skills found (expected NAME/{SKILL_FILE} inside, or a {SKILL_FILE})"]
    problems, seen = [], {}
    for file in files:
        if path.is_dir() and _escapes(file, root):
            problems.append(f"{file}: a symlink that resolves outside {root}; refused")
            continue
        try:
            skill = parse_skill(read_skill_file(file), where=str(file))
        except SkillError as exc:
            problems.append(str(exc))
            continue
        if file.name == SKILL_FILE and skill.name != file.parent.name:
            problems.append(
                f"{file}: name {skill.name!r} differs from its folder {file.parent.name!r}"
            )
        if skill.name in seen:
            problems.append(f"{file}: duplicate name {skill.name!r} (also in {seen[skill.name]})")
        seen.setdefault(skill.name, file)
    return problems


class SkillRepo:
    """Skills by name, optionally backed by a folder that every operation writes through to."""

    def __init__(self, root: str | Path | None = None, skills: list[Skill] | None = None):
        self.root = Path(root) if root is not None else None
        self._skills: dict[str, Skill] = {}
        self.version = 0  # bumps on every change, so retrieval knows when to re-index
        self.changes: list[str] = []  # the name each change touched: changes[v] made version v + 1
        for skill in skills or []:
            if skill.name in self._skills:
                raise SkillError(f"duplicate skill name {skill.name!r}")
            self._skills[skill.name] = skill

    # -- loading -------------------------------------------------------------------------
    @classmethod
    def load(cls, root: str | Path) -> "SkillRepo":
        """Load a repo folder; raise SkillError naming the first bad file. A missing folder
        is an empty repo (it is created on the first write)."""
        root = Path(root)
        if root.exists() and not root.is_dir():
            raise SkillError(f"{root}: a skill repo must be a folder")
        if root.exists():
            problems = validate_path(root, empty_ok=True)
            if problems:
                more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
                raise SkillError(problems[0] + more)
        skills = [
            parse_skill(read_skill_file(f), str(f))
            for f in (_skill_files(root) if root.exists() else [])
        ]
        return cls(root, skills)

    # -- reading -------------------------------------------------------------------------
    @property
    def skills(self) -> list[Skill]:
        return [self._skills[n] for n in sorted(self._skills)]

    def get(self, name: str) -> Skill | None:
        return self._skills.get(name)

    def __len__(self) -> int:
        return len(self._skills)

    def __contains__(self, name: str) -> bool:
        return name in self._skills

    def digest(self) -> str:
        """sha256 of the skills' files in order: equal for repos that read the same."""
        h = hashlib.sha256()
        for skill in self.skills:
            h.update(b"\0" + skill.to_markdown().encode())
        return h.hexdigest()

    # -- the curator's three operations ---------------------------------------------------
    def insert(self, name: str, description: str, body: str = "", **extra) -> OpResult:
        try:
            skill = Skill(name=name, description=description, body=body, extra=extra)
        except SkillError as exc:
            return OpResult(False, "insert", str(name), str(exc))
        if skill.name in self._skills:
            return OpResult(False, "insert", skill.name, f"skill {skill.name!r} exists; use update")
        return self._commit("insert", skill)

    def update(self, name: str, description: str | None = None, body: str | None = None) -> OpResult:
        old = self._skills.get(name)
        if old is None:
            return OpResult(False, "update", str(name), f"no skill named {name!r}; use insert")
        try:
            skill = Skill(
                name=name,
                description=old.description if description is None else description,
                body=old.body if body is None else body,
                extra=old.extra,
            )
        except SkillError as exc:
            return OpResult(False, "update", name, str(exc))
        return self._commit("update", skill)

    def delete(self, name: str) -> OpResult:
        try:
            validate_name(name)
        except SkillError as exc:
            return OpResult(False, "delete", str(name), str(exc))
        if name not in self._skills:
            return OpResult(False, "delete", name, f"no skill named {name!r}")
        if self.root is not None:
            folder = self.root / name
            # Rename first (atomic), then remove: a crash never leaves a half-deleted skill.
            trash = self.root / f".deleted-{name}-{os.getpid()}"
            try:
                os.replace(folder, trash)
            except OSError as exc:
                return OpResult(False, "delete", name, f"could not delete {folder}: {exc}")
            shutil.rmtree(trash, ignore_errors=True)
        del self._skills[name]
        self.version += 1
        self.changes.append(name)
        return OpResult(True, "delete", name)

    def _commit(self, op: str, skill: Skill) -> OpResult:
        if self.root is not None:
            try:
                write_atomic(self.root / skill.name / SKILL_FILE, skill.to_markdown())
            except OSError as exc:
                return OpResult(False, op, skill.name, f"could not write {skill.name}: {exc}")
        self._skills[skill.name] = skill
        self.version += 1
        self.changes.append(skill.name)
        return OpResult(True, op, skill.name)

    # -- copying ---------------------------------------------------------------------------
    def copy(self, root: str | Path | None = None) -> "SkillRepo":
        """A copy with the same skills; written to `root` (atomically per file) if given."""
        clone = SkillRepo(None, self.skills)
        if root is not None:
            root = Path(root)
            for parent in (root, *root.parents):
                if parent.exists() and not parent.is_dir():
                    raise SkillError(f"{root}: {parent} is a file; copy into a folder")
            for skill in clone.skills:
                write_atomic(root / skill.name / SKILL_FILE, skill.to_markdown())
            clone.root = root
        return clone
