"""File helpers every layer uses (the base layer: imports nothing of skillos but errors and secrets)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from skillos.errors import SkillosError
from skillos.secrets import redact_text


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()  # read once at import: os.umask is process-wide, games write from threads


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write text (UTF-8) or bytes to path so that a reader sees the old file or the new one,
    nothing between."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp makes 0600; a written file gets the usual mode
        with os.fdopen(fd, "wb") as fh:  # text never carries a key (skills, reports, configs)
            fh.write(redact_text(data).encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def append_bytes(path: Path, data: bytes) -> None:
    """Append to path through one O_APPEND descriptor: writers in other threads or processes
    never interleave inside `data` (a short write continues where it stopped)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


def temp_sibling(out: Path) -> Path:
    """An empty folder beside `out`, readable as a written folder is, to fill and `swap_in`."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    tmp.chmod(0o755)  # mkdtemp's 0700 would hide the folder from a static host or another reader
    return tmp


def swap_in(tmp: Path, out: Path) -> None:
    """Put the filled folder `tmp` at `out`; an old `out` is renamed aside first and removed after,
    so a reader sees the old folder or the new one."""
    if out.exists():
        trash = out.with_name(f".{out.name}-old-{tmp.name}")
        out.rename(trash)
        tmp.rename(out)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        tmp.rename(out)


@contextlib.contextmanager
def replaced_folder(out: Path, mark: str, what: str):
    """Write a whole folder so that a reader sees the old one or the new one: yields a temporary
    folder beside `out` to fill; on success it gets the `mark` file and replaces `out`, on any
    error it is removed and `out` is untouched. `out` must be absent, empty, or an earlier folder
    holding `mark` (`what` names it in the refusal), so nothing a person wrote is replaced."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / mark).exists())):
        raise SkillosError(f"{out}: exists and is not an earlier {what}; choose another folder")
    tmp = temp_sibling(out)
    try:
        yield tmp
        (tmp / mark).write_text(f"written by {what}\n")
        swap_in(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, read in 1 MiB blocks (a model or an import need not fit in memory)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
