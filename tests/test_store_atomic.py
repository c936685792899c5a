import os

import pytest

from skillos.repo import SkillRepo, store


def files(root):
    return {p.relative_to(root): p.read_text() for p in root.rglob("*") if p.is_file()}


def test_crash_during_write_keeps_the_old_skill(tmp_path, monkeypatch):
    repo = SkillRepo(tmp_path)
    assert repo.insert("apples", "Where apples are.", "fridge " * 100).ok
    before = files(tmp_path)
    real_fsync = os.fsync

    def crash(fd):  # the process dies after a partial write, before the rename
        raise OSError("simulated power loss")

    monkeypatch.setattr(store.os, "fsync", crash)
    result = repo.update("apples", body="countertop")
    assert not result.ok and "simulated power loss" in result.reason
    monkeypatch.setattr(store.os, "fsync", real_fsync)
    assert files(tmp_path) == before  # no temp file left, old content intact
    assert repo.get("apples").body.startswith("fridge")  # memory unchanged too
    assert SkillRepo.load(tmp_path).get("apples").body.startswith("fridge")


def test_crash_during_rename_never_leaves_empty_or_partial_file(tmp_path, monkeypatch):
    repo = SkillRepo(tmp_path)
    repo.insert("apples", "Where apples are.", "fridge")
    monkeypatch.setattr(store.os, "replace", lambda *a: (_ for _ in ()).throw(OSError("killed")))
    assert not repo.insert("pears", "Where pears are.", "bowl").ok
    assert not repo.delete("apples").ok
    monkeypatch.undo()
    loaded = SkillRepo.load(tmp_path)
    assert [s.name for s in loaded.skills] == ["apples"]
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_write_atomic_interrupted_mid_write(tmp_path, monkeypatch):
    target = tmp_path / "x" / "SKILL.md"
    store.write_atomic(target, "old")

    class Boom(Exception):
        pass

    real_fdopen = os.fdopen

    def partial(fd, *a, **k):
        fh = real_fdopen(fd, *a, **k)
        real_write = fh.write

        def write(text):
            real_write(text[: len(text) // 2])
            raise Boom()

        fh.write = write
        return fh

    monkeypatch.setattr(store.os, "fdopen", partial)
    with pytest.raises(Boom):
        store.write_atomic(target, "new content that is long")
    assert target.read_text() == "old"
    assert [p.name for p in target.parent.iterdir()] == ["SKILL.md"]
