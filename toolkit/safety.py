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
from skillos.secrets import redact_text

MAX_CONFIG_BYTES = 1 << 20  # a config is a few KB; 1 MiB is generous and parses in milliseconds
MAX_SKILL_BYTES = 256 << 10  # SKILL.md: 1024-char description + 20k-char body, with room
MAX_YAML_ALIASES = 100  # anchors are handy in configs; a hundred uses is far beyond that
MAX_YAML_NODES = 100_000  # nodes after alias expansion: what a consumer would materialise


def _regular_stat(path: Path, what: str):
    """The stat of a regular file; a missing path, a folder, a FIFO or a device is a one-line
    SkillosError naming it."""
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
    return info


def read_text(path: str | Path, limit: int, what: str = "file") -> str:
    """UTF-8 text of a regular file no larger than `limit` bytes; else a one-line SkillosError."""
    path = Path(path)
    info = _regular_stat(path, what)
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


MAX_LINE_BYTES = 64 << 20  # one JSON line of a run folder, a transcript or a task file
MAX_JSONL_BYTES = 2 << 30  # one JSONL file read at most this far (a long agent session is ~100 MB)
MAX_DOC_BYTES = 64 << 20  # one JSON document: report.json, state.json, proposal.json, a dataset file
MAX_JSON_DEPTH = 100  # nesting levels of one JSON value (a 200,000-deep line is skipped, not recursed)


def open_regular(path: str | Path, what: str = "file"):
    """A binary file object for a regular file, opened without blocking; a folder, FIFO, socket
    or device (`/dev/zero`) is a one-line SkillosError, checked again on the open file (a FIFO
    swapped in after the stat cannot block the read)."""
    path = Path(path)
    _regular_stat(path, what)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise SkillosError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise SkillosError(f"{path}: not a regular file (a pipe or device?); expected a {what}")
    return os.fdopen(fd, "rb")


def json_depth_ok(value, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether a parsed JSON value nests at most `limit` levels (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, (dict, list)))
    return True


def parse_json(data: bytes | str, max_depth: int = MAX_JSON_DEPTH):
    """json.loads that refuses nesting deeper than `max_depth` (ValueError, never a RecursionError
    later in whatever walks the value)."""
    import json

    if isinstance(data, bytes):
        opens = data.count(b"[") + data.count(b"{")
    else:
        opens = data.count("[") + data.count("{")
    try:
        value = json.loads(data)
    except RecursionError:
        raise ValueError(f"nested more than {max_depth} levels") from None
    if opens > max_depth and not json_depth_ok(value, max_depth):
        raise ValueError(f"nested more than {max_depth} levels")
    return value


# What each reason a bounded reader skips or repairs a line for means, in words (every reader
# that shows a skip says it so: the view, sleep's harvest).
SKIP_WORDS = {"partial-last-line": "partial last line (a run in progress or killed mid-write)",
              "unparseable-line": "not a JSON object", "not-an-object": "not a JSON object",
              "line-too-long": f"a line longer than {MAX_LINE_BYTES} bytes, skipped",
              "too-deep": f"nested deeper than {MAX_JSON_DEPTH} levels, skipped",
              "repaired-utf8": "not UTF-8 (read with replacements)",
              "file-truncated": "read stopped at the size cap"}


class Skips:
    """What a bounded reader skipped: counts by reason, and the first few places (file:line)."""

    def __init__(self, keep: int = 20):
        from collections import Counter

        self.counts = Counter()
        self.places: list[str] = []
        self.keep = keep

    def add(self, reason: str, where: str) -> None:
        self.counts[reason] += 1
        if len(self.places) < self.keep:
            self.places.append(f"{where}: {reason}")

    def __bool__(self) -> bool:
        return bool(self.counts)

    def total(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> str:
        return ", ".join(f"{n} {reason}" for reason, n in sorted(self.counts.items()))


def jsonl_records(path: str | Path, what: str = "JSONL file", skips: Skips | None = None, *,
                  max_line_bytes: int = MAX_LINE_BYTES, max_bytes: int = MAX_JSONL_BYTES,
                  max_depth: int = MAX_JSON_DEPTH, objects_only: bool = True):
    """(line number, text, record) of every JSON line of a regular file, read in bounded chunks:
    a line longer than `max_line_bytes`, nested deeper than `max_depth`, that does not parse, is
    not UTF-8 (repaired, still read) or is not an object is skipped and counted in `skips`
    (reason: line-too-long, too-deep, unparseable-line, partial-last-line, not-an-object), never
    held whole in memory nor recursed. Reading stops at `max_bytes` (counted: file-truncated).
    A folder, FIFO or device is a one-line SkillosError (open_regular)."""
    skips = skips if skips is not None else Skips()
    name = Path(path).name
    with open_regular(path, what) as fh:
        pending, number, read, dropping = bytearray(), 0, 0, False

        def line_of(raw: bytes, last: bool):
            nonlocal number, dropping
            number += 1
            if dropping:  # the tail of a line already counted as too long
                dropping = False
                return
            if len(raw) > max_line_bytes:
                skips.add("line-too-long", f"{name} line {number}")
            elif raw.strip():
                yield from _one_record(bytes(raw), number, name, skips, max_depth, objects_only, last)

        while True:
            chunk = fh.read(1 << 20) if read < max_bytes else b""
            read += len(chunk)
            if not chunk:
                if pending.strip() or dropping:
                    yield from line_of(pending, last=True)
                if read >= max_bytes:
                    skips.add("file-truncated", f"{name}: read stopped at {max_bytes} bytes")
                return
            parts = chunk.split(b"\n")
            if not dropping:
                pending += parts[0]
            if len(parts) > 1:
                yield from line_of(pending, last=False)
                for middle in parts[1:-1]:
                    yield from line_of(middle, last=False)
                pending = bytearray(parts[-1])
            if len(pending) > max_line_bytes and not dropping:
                number_now = number + 1
                skips.add("line-too-long", f"{name} line {number_now}")
                dropping, pending = True, bytearray()
            elif dropping and len(parts) == 1:
                pending = bytearray()


def _one_record(raw: bytes, number: int, name: str, skips: Skips, max_depth: int, objects_only: bool, last: bool):
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        skips.add("repaired-utf8", f"{name} line {number}")
    try:
        record = parse_json(text, max_depth)
    except ValueError as exc:
        deep = "nested" in str(exc)
        skips.add("too-deep" if deep else "partial-last-line" if last else "unparseable-line", f"{name} line {number}")
        return
    if objects_only and not isinstance(record, dict):
        skips.add("not-an-object", f"{name} line {number}")
        return
    yield number, text, record


def read_json_file(path: str | Path, what: str = "JSON file", limit: int = MAX_DOC_BYTES,
                   max_depth: int = MAX_JSON_DEPTH, expect: type | None = dict):
    """One JSON document from a regular file of at most `limit` bytes; anything else (missing,
    a FIFO, too big, not JSON, too deep, not the expected type) is a one-line SkillosError
    naming the file."""
    text = read_text(path, limit, what)
    try:
        value = parse_json(text, max_depth)
    except ValueError as exc:
        raise SkillosError(f"{path}: damaged {what} ({str(exc).splitlines()[0][:120]})") from None
    if expect is not None and not isinstance(value, expect):
        raise SkillosError(f"{path}: damaged {what} (a JSON {type(value).__name__}, expected an object)")
    return value


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

    def clean(obj):
        if isinstance(obj, float) and not math.isfinite(obj):
            return None
        if isinstance(obj, dict):
            return {k: clean(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [clean(v) for v in obj]
        return obj

    return redact_text(json.dumps(clean(data), indent=indent, default=str, allow_nan=False))


class CallTimeout(Exception):
    """A call to a bounded worker did not finish within its time (the worker was killed)."""


class WorkerFailed(Exception):
    """A bounded worker died or answered something that is not a result (a crash, not a timeout)."""


class CallFailed(Exception):
    """The function raised in its worker (the worker lives on); the message names the exception."""


class BoundedWorkers:
    """Calls of one function (`"package.module:function"`, JSON-able arguments and result) in
    worker processes, each call bounded in wall time from any thread.

    A worker thread cannot use SIGALRM (only the main thread may set it), and a thread cannot be
    stopped; a process can. A call that passes `timeout_s` kills its worker and raises
    `CallTimeout`; the next call starts a fresh one. A worker that dies raises `WorkerFailed`;
    an exception inside the function raises `CallFailed`. Up to `size` workers serve concurrent
    threads (a caller waits for a free one; that wait is not part of its bound). Each worker
    dies with this process, runs under a memory cap (`memory_bytes`), and is started by the
    interpreter running this one (`python -c`), so no `__main__` is re-imported."""

    START_TIMEOUT_S = 120.0  # importing the function's library (sympy, ...) on a loaded machine

    def __init__(self, target: str, size: int | None = None, memory_bytes: int | None = 2 << 30):
        import threading

        self.target = target
        self.size = size or max(1, min(4, os.cpu_count() or 1))
        self.memory_bytes = memory_bytes
        self._idle: list = []
        self._count = 0
        self._cond = threading.Condition()

    def call(self, *args, timeout_s: float):
        worker = self._take()
        try:
            result = worker.call(list(args), timeout_s)
        except CallFailed:
            self._give(worker)
            raise
        except BaseException:
            worker.kill()
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise
        self._give(worker)
        return result

    def _give(self, worker) -> None:
        with self._cond:
            self._idle.append(worker)
            self._cond.notify()

    def _take(self):
        with self._cond:
            while not self._idle and self._count >= self.size:
                self._cond.wait()
            if self._idle:
                return self._idle.pop()
            self._count += 1
        try:
            return _Worker(self.target, self.memory_bytes, self.START_TIMEOUT_S)
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise

    def close(self) -> None:
        with self._cond:
            idle, self._idle = self._idle, []
            self._count -= len(idle)
        for worker in idle:
            worker.kill()


class _Worker:
    def __init__(self, target: str, memory_bytes: int | None, start_timeout_s: float):
        import subprocess

        code = (f"from skillos.safety import serve_worker; serve_worker({target!r}, {os.getpid()}, "
                f"{memory_bytes!r})")
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True)
        self.buf = b""
        try:
            ready = self._line(time.monotonic() + start_timeout_s)
        except CallTimeout:
            self.kill()
            raise WorkerFailed(f"a worker for {target} did not start in {start_timeout_s:.0f} s") from None
        if ready != b"ready":
            self.kill()
            raise WorkerFailed(f"a worker for {target} could not start: {ready[:200].decode(errors='replace')}")

    def call(self, args: list, timeout_s: float):
        import json

        deadline = time.monotonic() + timeout_s
        try:
            self.proc.stdin.write(json.dumps(args).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError:
            raise WorkerFailed("the worker is gone") from None
        reply = json.loads(self._line(deadline))
        if "error" in reply:
            raise CallFailed(reply["error"])
        return reply["result"]

    def _line(self, deadline: float) -> bytes:
        import select

        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CallTimeout()
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise WorkerFailed("the worker died")
                self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass


def serve_worker(target: str, parent_pid: int, memory_bytes: int | None) -> None:
    """The worker's loop (BoundedWorkers): one JSON list of arguments a line in, one JSON
    {"result"} or {"error"} a line out. Anything the function prints goes to stderr."""
    import importlib
    import json

    die_with_parent(parent_pid)
    if memory_bytes:
        import resource

        try:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        except (ValueError, OSError):
            pass
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints cannot corrupt the replies
    try:
        module, name = target.split(":")
        fn = getattr(importlib.import_module(module), name)
    except Exception as exc:  # noqa: BLE001 - reported to the caller as a failed start
        out.write(f"cannot load {target}: {type(exc).__name__}: {exc}".encode()[:500] + b"\n")
        out.flush()
        return
    out.write(b"ready\n")
    out.flush()
    for line in sys.stdin.buffer:
        try:
            reply = {"result": fn(*json.loads(line))}
        except MemoryError:
            reply = {"error": "out of memory"}
        except Exception as exc:  # noqa: BLE001 - the caller decides what a failed call means
            reply = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        out.write(json.dumps(reply, default=str).encode() + b"\n")
        out.flush()


class Ticker:
    """Progress of one long phase as plain lines: the first, then one each time another 10% is
    done (at least `min_gap_s` after the line before: a phase that takes a second prints its
    first line and its last, not a line per item) or 10 s have passed, and the last; `echo` gets
    each line whole (a pipe, CI and an agent's shell read lines, not a bar). Calls with
    done=None (an unknown total) print on time only."""

    def __init__(self, echo, label: str, total: int | None = None, every_s: float = 10.0, clock=time.monotonic,
                 min_gap_s: float = 1.0):
        self.echo, self.label, self.total, self.every_s, self.clock = echo, label, total, every_s, clock
        self.min_gap_s = min_gap_s
        self.start = self.last_time = clock()
        self.last_done: int | None = None

    def __call__(self, done: int | None = None, total: int | None = None, extra: str = "") -> None:
        if self.echo is None:
            return
        total = self.total if total is None else total
        self.total = total
        now = self.clock()
        step = max(1, -(-(total or 0) // 10))  # a tenth, rounded up: a line per 10% at most
        finished = done is not None and bool(total) and done >= total
        tenth = (done is not None and bool(total) and self.last_done is not None
                 and done // step != self.last_done // step
                 and now - self.last_time >= self.min_gap_s)
        due = self.last_done is None or now - self.last_time >= self.every_s or finished or tenth
        if not due or (done is not None and done == self.last_done and now - self.last_time < self.every_s):
            return
        self.last_done, self.last_time = (done if done is not None else self.last_done or 0), now
        count = "" if done is None else (f"{done}/{total}" if total else f"{done}")
        elapsed = f"{now - self.start:.0f} s"

        # a label names an arm: a key-shaped one never reaches a log
        self.echo(redact_text(f"{self.label}: {count}{' · ' if count else ''}{elapsed}" + (f" · {extra}" if extra else "")))
