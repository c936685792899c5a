"""File helpers every layer uses (the base layer: imports nothing of skillos but errors and secrets)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

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
