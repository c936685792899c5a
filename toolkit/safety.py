"""Guards for input a user (or an adversary) hands skillos, and for the processes it starts.

* `read_text`: a file read with a size cap checked before parsing, that refuses folders, FIFOs
  and devices instead of hanging on them;
* `load_yaml`: safe YAML that refuses duplicated keys (the second silently replaced the first)
  and alias bombs (a few lines that expand to gigabytes in messages and hashes);
* `RunLock`: one writer per run folder (flock), refusal naming the PID that holds it;
* `die_with_parent`: worker processes end when the process that started them ends, so a
  `kill -9` of the main process cannot leave writers behind for a resume to race.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import signal
import stat
import sys
import time
from pathlib import Path

import yaml

from skillos.errors import SkillosError, yaml_error_line

MAX_CONFIG_BYTES = 1 << 20  # a config is a few KB; 1 MiB is generous and parses in milliseconds
MAX_SKILL_BYTES = 256 << 10  # SKILL.md: 1024-char description + 20k-char body, with room
MAX_YAML_ALIASES = 100  # anchors are handy in configs; a hundred uses is far beyond that
MAX_YAML_NODES = 100_000  # nodes after alias expansion: what a consumer would materialise


def read_text(path: str | Path, limit: int, what: str = "file") -> str:
    """UTF-8 text of a regular file no larger than `limit` bytes; else a one-line SkillosError."""
    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise SkillosError(f"{path}: no such {what}") from None
    except OSError as exc:
        raise SkillosError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(info.st_mode):
        raise SkillosError(f"{path}: is a folder, expected a {what}")
    if not stat.S_ISREG(info.st_mode):
        raise SkillosError(f"{path}: not a regular file (a pipe or device?); expected a {what}")
    if info.st_size > limit:
        raise SkillosError(f"{path}: {info.st_size} bytes; a {what} may be at most {limit} bytes")
    try:  # O_NONBLOCK: a FIFO swapped in after the stat still cannot block the read
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise SkillosError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise SkillosError(f"{path}: more than {limit} bytes; a {what} may be at most {limit} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillosError(f"{path}: not UTF-8 text") from None


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that counts aliases and refuses a key given twice in one mapping."""

    def __init__(self, stream):
        super().__init__(stream)
        self.aliases = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_YAML_ALIASES:
                mark = self.peek_event().start_mark
                raise yaml.YAMLError(f"line {mark.line + 1}: more than {MAX_YAML_ALIASES} YAML "
                                     "aliases (*name); refusing to expand them")
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        seen = {}
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                key = key_node.value
                if key in seen:
                    raise yaml.YAMLError(f"line {key_node.start_mark.line + 1}: key {key!r} given twice "
                                         f"(first on line {seen[key] + 1}); the second would replace the first")
                seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep)


def _expanded_size(node, memo: dict) -> int:
    """Nodes the document has once every alias is expanded (shared nodes counted per use)."""
    if id(node) in memo:
        return memo[id(node)]
    memo[id(node)] = 1  # a recursive alias counts once instead of looping
    if isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(n, memo) for n in node.value)
    elif isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    else:
        size = 1
    memo[id(node)] = min(size, MAX_YAML_NODES + 1)
    return memo[id(node)]


def load_yaml(text: str, where: str):
    """Parse one YAML document safely; a one-line SkillosError naming `where` and the line."""
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, {}) > MAX_YAML_NODES:
            raise yaml.YAMLError(f"expands to more than {MAX_YAML_NODES} nodes through aliases; refusing")
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        detail = str(exc) if type(exc) is yaml.YAMLError else "invalid YAML"
        raise SkillosError(f"{where}:{yaml_error_line(exc)} {detail}"[:500]) from None
    except RecursionError:
        raise SkillosError(f"{where}: YAML nested too deeply") from None
    finally:
        loader.dispose()


class RunLock:
    """An exclusive lock on a run folder while a process writes it (`.lock`, holding the PID).

    flock is released by the kernel when every process holding the file closes it or dies, so a
    killed run never leaves a stale lock; forked workers share it, so a resume is refused while
    any of them still lives. Acquiring waits up to `wait_s` for a holder that is dying."""

    NAME = ".lock"

    def __init__(self, folder: str | Path, wait_s: float = 3.0):
        self.path = Path(folder) / self.NAME
        self.wait_s = wait_s
        self.fd: int | None = None

    def acquire(self) -> "RunLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                    os.close(fd)
                    raise SkillosError(f"{self.path.parent}: another skillos process (PID {holder}) is "
                                       "writing this run folder; wait for it to end or stop it first") from None
                time.sleep(0.1)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing drops the flock; the file stays (harmless, tiny)
            self.fd = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


def die_with_parent(parent_pid: int) -> None:
    """Call first thing in a worker: the kernel kills it when its parent dies (Linux
    PR_SET_PDEATHSIG); elsewhere, a thread polls the parent. A parent already gone: exit now."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            _poll_parent(parent_pid)
    else:
        _poll_parent(parent_pid)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def _poll_parent(parent_pid: int) -> None:
    import threading

    def watch():
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="skillos-parent-watch").start()


def json_text(data, indent: int | None = 1) -> str:
    """JSON that every parser reads: a non-finite float (inf, nan) becomes null, never the
    `Infinity` / `NaN` tokens Python writes by default; secrets redacted."""
    import json
    import math

    from skillos.secrets import redact_text

    def clean(obj):
        if isinstance(obj, float) and not math.isfinite(obj):
            return None
        if isinstance(obj, dict):
            return {k: clean(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [clean(v) for v in obj]
        return obj

    return redact_text(json.dumps(clean(data), indent=indent, default=str, allow_nan=False))
