"""Gate 7, "watch the box, not the job": a watchdog that looks at the machine and the job's
artifacts, not at what the job says about its own health. It runs as a process of its own
(`skillos watch`), beside every launch that gates it (`watching`: an eval, sweep, optimize run,
sleep night or slate eval, and a training launch on each path: in this process, under accelerate,
on Modal inside the container), in a session of its own so a Ctrl-C to the job does not reach
it: a job that hangs, or dies, is still watched.

It watches process liveness, growth of logs and checkpoints (a stall is no growth for N minutes
while the process lives), GPU utilization (NVML, where there is a GPU) or CPU use, and the box
going idle after the job ends with nothing else running. Every alarm is printed and written to
the ledger as an operational failure with how long the condition lasted. Probes and the clock
are injected, so tests drive it with fakes; a probe that cannot measure returns None and is
reported as unmeasured, never as idle.
"""

from __future__ import annotations

import os
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from skillos.config.compute import STOP_GRACE_S
from skillos.ledger.store import now, pid_alive
from skillos.registry import compute_of
from skillos.devices import gpus_per_machine


@dataclass
class WatchConfig:
    pids: list = field(default_factory=list)  # the job's processes
    paths: list = field(default_factory=list)  # logs / checkpoint folders that should grow
    stall_minutes: float = 15.0
    idle_minutes: float = 10.0
    busy_percent: float = 10.0  # GPU (or CPU, without a GPU) use below this counts as idle
    gpus: int = 0  # GPUs on the box, for the GPU-hours an idle box costs
    stop_on: list = field(default_factory=list)  # alarm kinds that stop the job (compute.stop_on)
    stop_grace_s: float = STOP_GRACE_S  # after SIGTERM, the job's time to save before SIGKILL
    # after the job ends the watch goes on this long (compute.watch_after_minutes; None: idle_minutes),
    # then stops itself; 0: it stops at its first look after the end
    after_minutes: float | None = None
    done_file: str | None = None  # a launch creates it when its job is over (its own process lives on)
    since: str | None = None  # when the launch started its watch (the ledger's stamp): the runs it answers for

    @property
    def watch_after(self) -> float:
        return self.idle_minutes if self.after_minutes is None else self.after_minutes


@dataclass
class Alarm:
    kind: str  # stall | process-exited | job-died | device-idle | box-idle
    message: str
    minutes: float


class SystemProbes:
    """Real probes: /proc for processes and CPU, file sizes, NVML for GPUs when present."""

    def __init__(self):
        self._cpu_last = None

    def alive(self, pid: int) -> bool:
        return pid_alive(pid)

    def stop(self, pids: list, grace_s: float) -> None:
        """SIGTERM to every pid (accelerate forwards it to its ranks; the trainer may save), then one
        wait of `grace_s` for them all, then SIGKILL to any still alive."""
        import signal

        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(self.alive(pid) for pid in pids):
            time.sleep(0.2)
        for pid in pids:
            if self.alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

    def size(self, path: str) -> int | None:
        p = Path(path)
        if p.is_dir():
            return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
        return p.stat().st_size if p.exists() else None

    def busy_percent(self) -> float | None:
        """Mean GPU utilization if NVML answers, else CPU use since the last call, else None."""
        try:
            import pynvml  # nvidia-ml-py, only on GPU machines

            pynvml.nvmlInit()
            n = pynvml.nvmlDeviceGetCount()
            if n:
                utils = [pynvml.nvmlDeviceGetUtilizationRates(pynvml.nvmlDeviceGetHandleByIndex(i)).gpu
                         for i in range(n)]
                return sum(utils) / n
        except Exception:  # noqa: BLE001 - no GPU, no driver, no library: fall back to CPU
            pass
        try:
            fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        except (OSError, ValueError):
            return None
        idle, total = fields[3] + fields[4], sum(fields)
        last, self._cpu_last = self._cpu_last, (idle, total)
        if last is None or total == last[1]:
            return None
        return 100.0 * (1 - (idle - last[0]) / (total - last[1]))


HEARTBEAT_S = 10.0  # the longest a running watch stays silent
DONE_POLL_S = 0.25  # how often a watch whose launch names a done file looks for it between looks


class Watchdog:
    def __init__(self, config: WatchConfig, probes=None, clock: Callable[[], float] = time.monotonic,
                 ledger=None, echo: Callable[[str], None] = print):
        self.config, self.probes = config, probes or SystemProbes()
        self.clock, self.ledger, self.echo = clock, ledger, echo
        start = clock()
        self._grew_at = {p: start for p in config.paths}
        self._sizes = {p: None for p in config.paths}
        self._busy_since = start  # last time the device was busy
        self._job_ended_at = None
        self._ended_looks = 0  # looks since the job ended
        self._raised: set = set()
        self.alarms: list[Alarm] = []
        self.stopped: str | None = None  # the alarm kind that stopped the job
        self.watch_id = None  # its row in the ledger's watches (`start`)
        self._since = None  # when it started, as the ledger stamps runs: the runs it answers for

    def start(self, log: str | None = None) -> None:
        """Record the watch in the ledger (`skillos ledger watch` lists it)."""
        if self.ledger is not None:
            self._since = self.config.since or now()
            self.watch_id = self.ledger.start_watch(self.config.pids, self.config.paths, self.config.gpus,
                                                    self.config.watch_after, log)

    def _said_over(self) -> bool:
        return bool(self.config.done_file) and os.path.exists(self.config.done_file)

    def job_alive(self) -> bool:
        return not self._said_over() and any(self.probes.alive(pid) for pid in self.config.pids)

    def tick(self) -> list[Alarm]:
        """Look once; return the alarms raised by this look."""
        now, new = self.clock(), []
        alive = self.job_alive()
        for path in self.config.paths:
            size = self.probes.size(path)
            if size is not None and size != self._sizes[path]:
                self._sizes[path], self._grew_at[path] = size, now
                self._raised.discard(("stall", path))
            stalled = (now - self._grew_at[path]) / 60
            if alive and stalled >= self.config.stall_minutes:
                new += self._raise(("stall", path), f"{path} has not grown for {stalled:.0f} min "
                                   "while the job is alive", stalled)
        busy = self.probes.busy_percent()
        if busy is not None and busy >= self.config.busy_percent:
            self._busy_since = now
            self._raised -= {("device-idle",), ("box-idle",)}
        idle_for = (now - self._busy_since) / 60
        if alive:
            self._job_ended_at = None
            if busy is not None and idle_for >= self.config.stall_minutes:
                new += self._raise(("device-idle",), f"device use under {self.config.busy_percent:.0f}% "
                                   f"for {idle_for:.0f} min while the job is alive", idle_for)
        else:
            if self._job_ended_at is None:
                self._job_ended_at = now
                if self.config.pids and not self._said_over():  # a launch that said its job is over: no alarm
                    new += self._raise(("process-exited",), "the job's processes have exited", 0.0)
            new += self._orphans()
            ended_for = (now - self._job_ended_at) / 60
            idle = min(ended_for, idle_for) if busy is not None else None
            if idle is not None and idle >= self.config.idle_minutes:
                new += self._raise(("box-idle",), f"the box has been idle for {idle:.0f} min since "
                                   "the job ended, with nothing running", idle)
        return new

    def _orphans(self) -> list[Alarm]:
        """A run of this host begun since the watch started, still [running] in the ledger while the
        process that wrote it is gone: the job died without its final row."""
        if self.ledger is None or self._since is None:
            return []
        new = []
        for run in self.ledger.orphaned_runs(self._since):
            new += self._raise(("job-died", run["id"]), f"the job died without its final row: run #{run['id']} "
                               f"is still [running] in the ledger and the process that wrote it ({run['pid']}) "
                               "is gone", 0.0)
        return new

    def _raise(self, key, message: str, minutes: float) -> list[Alarm]:
        if key in self._raised:
            return []
        self._raised.add(key)
        alarm = Alarm(key[0], message, minutes)
        self.alarms.append(alarm)
        self.echo(f"ALARM [{alarm.kind}] {message}")
        stopping = alarm.kind in self.config.stop_on and self.job_alive()
        if self.ledger is not None and alarm.kind != "process-exited":
            hours = minutes / 60
            self.ledger.add_failure(
                f"watchdog {alarm.kind}: {message}" + ("; the launch was stopped (compute.stop_on)" if stopping else ""),
                "wasted-compute", ["job-not-box"],
                kind="operational", cost_wall_hours=hours,
                cost_gpu_hours=hours * self.config.gpus if self.config.gpus else None,
                detected_by="watchdog", gate="7", run_id=key[1] if alarm.kind == "job-died" else None)
        if stopping:  # the configured rule: a stalled or idle launch stops paying for its GPUs
            self.echo(f"STOP [{alarm.kind}] stopping the job's processes {self.config.pids} (compute.stop_on)")
            self.probes.stop(list(self.config.pids), self.config.stop_grace_s)
            self.stopped = alarm.kind
        return [alarm]

    def run(self, interval_s: float = 60.0, max_ticks: int | None = None,
            sleep: Callable[[float], None] = time.sleep) -> list[Alarm]:
        """Tick until the box-idle alarm (the job is over and the box is idle), until the job has
        been over for the watch after it (config.watch_after: the box busy with another job, or
        nothing left to alarm about), or max_ticks; then end the watch's row in the ledger."""
        ticks, why = 0, f"stopped after {max_ticks} look(s)"
        try:
            while max_ticks is None or ticks < max_ticks:
                if any(a.kind == "box-idle" for a in self.tick()):
                    why = "the box sat idle after the job ended (alarmed)"
                    break
                ended = self._job_ended_at
                self._ended_looks = self._ended_looks + 1 if ended is not None else 0
                after = self.config.watch_after
                if ((self.config.pids or self.config.done_file) and ended is not None
                        and (self.config.after_minutes == 0 or self._ended_looks > 2)  # the idle alarm had its looks
                        and (self.clock() - ended) / 60 >= after):
                    why = f"the job ended and the watch after it ({after:g} min) is over"
                    break
                ticks += 1
                self._looked(ended is not None)
                self.echo(self.status(ticks))
                if max_ticks is not None and ticks >= max_ticks:
                    break
                self._wait(interval_s, sleep, ended is None)
        except BaseException as exc:
            why = f"stopped by {type(exc).__name__}"
            raise
        finally:
            if self.ledger is not None and self.watch_id is not None:
                self.ledger.end_watch(self.watch_id, len(self.alarms), why)
            self.echo(f"watch: ended: {why}")
        return self.alarms

    def _looked(self, ended: bool) -> None:
        if self.ledger is not None and self.watch_id is not None:
            self.ledger.watch_looked(self.watch_id, len(self.alarms), ended)

    def _wait(self, interval_s: float, sleep, running: bool) -> None:
        """Until the next look, a line at least every 10 s (a quiet watch is not a dead one); a job
        that ends meanwhile (its done file appears) is looked at at once."""
        waited, said = 0.0, 0.0
        while waited < interval_s:
            chunk = min(DONE_POLL_S if running and self.config.done_file else HEARTBEAT_S, interval_s - waited)
            sleep(chunk)
            waited += chunk
            if running and self.config.done_file and not self.job_alive():
                return
            if waited < interval_s and waited - said >= HEARTBEAT_S:
                said = waited
                self.echo(f"watch: next look in {interval_s - waited:.0f} s ({len(self.alarms)} alarm(s) so far)")

    def status(self, looks: int) -> str:
        """One line: what the last look saw."""
        alive = self.job_alive()
        sizes = ", ".join(f"{p}: {'missing' if self._sizes[p] is None else self._sizes[p]} B" for p in self.config.paths)
        return (f"watch: look {looks}: job {'alive' if alive else 'ended' if self.config.pids else 'not given'}"
                + (f"; {sizes}" if sizes else "") + f"; {len(self.alarms)} alarm(s)")


def command(pids, paths, ledger_path, stall_minutes: float, gpus: int = 0, interval_s: float = 30.0,
            idle_minutes: float | None = None, stop_on: list | None = None, after_minutes: float | None = None,
            done_file=None, log=None, since: str | None = None) -> list[str]:
    """The watchdog process (`skillos watch`) for these pids and paths, recording to the ledger at
    `ledger_path`: what `watching` starts, and what a launch plan shows."""
    import sys

    argv = [sys.executable, "-m", "skillos", "watch", "--ledger", str(ledger_path), "--stall-minutes",
            f"{stall_minutes:g}", "--interval", f"{interval_s:g}", "--gpus", str(gpus)]
    if idle_minutes is not None:
        argv += ["--idle-minutes", f"{idle_minutes:g}"]
    if after_minutes is not None:
        argv += ["--after-minutes", f"{after_minutes:g}"]
    for flag, value in (("--done-file", done_file), ("--log", log), ("--since", since)):
        if value is not None:
            argv += [flag, str(value)]
    for kind in stop_on or []:
        argv += ["--stop-on", kind]
    for pid in pids:
        argv += ["--pid", str(pid)]
    for path in paths:
        argv += ["--path", str(path)]
    return argv


IDLE_AFTER_MINUTES = 10.0  # a launch's box idle this long after its job ended alarms (within the watch after it)


def watch_after(cfg, gpus: int) -> tuple[float, str]:
    """How long a launch's watch goes on after its job ends, and why: compute.watch_after_minutes
    where the launch holds accelerators (the seed's costliest failure: GPUs idle for days after a
    run died or finished); a launch without them has none to sit idle, so its watch ends with the
    job, after checking the job left its final row."""
    if not gpus:
        return 0.0, "no accelerators to sit idle: the watch ends with the job, after checking its final row"
    if not compute_of(cfg).box_outlives_job:
        return 0.0, (f"compute.backend {cfg.compute.backend}: the machine ends with the job and bills nothing after "
                     "it, so the watch ends with the job, after checking its final row")
    minutes = cfg.compute.watch_after_minutes
    return minutes, (f"compute.watch_after_minutes: {minutes:g} min after the job ends, alarming if the {gpus} "
                     f"GPU(s) sit idle {min(IDLE_AFTER_MINUTES, minutes):g} min or the job died without its final row")


def launch_watch(cfg, paths: list, where: str, training: bool = False) -> dict | None:
    """What gate 7 starts beside a launch of `cfg` (None: compute.watchdog is off): the paths it
    watches, its stall rule, the GPUs it costs an idle box in, how long it outlives the job, and
    `where` it runs. Every launch path asks this (training/common/launch.py, skillos.api), and the trace
    reads the same answer."""
    if not cfg.compute.watchdog:
        return None

    gpus = gpus_per_machine(cfg) or 0
    after, why = watch_after(cfg, gpus)
    spec = {"where": where, "paths": [str(p) for p in paths], "stall_minutes": cfg.compute.stall_minutes,
            "gpus": gpus, "stop_on": list(cfg.compute.stop_on) if training else [],  # stops training launches only
            "after_minutes": after, "after": why}
    spec["command"] = command(["PID"], spec["paths"], "LEDGER", spec["stall_minutes"], gpus,
                              idle_minutes=_idle_minutes(after), stop_on=spec["stop_on"], after_minutes=after)
    return spec


def _idle_minutes(after: float) -> float | None:
    return min(IDLE_AFTER_MINUTES, after) if after else None


@contextmanager
def watching(paths: list, ledger_path, stall_minutes: float, gpus: int = 0,
             interval_s: float = 30.0, echo: Callable[[str], None] = print, pids: list | None = None,
             stop_on: list | None = None, after_minutes: float = 0.0):
    """Run the watchdog as a process of its own (`command`) on `pids` (default: this process) and
    `paths` for the duration of a launch (gate 7); its alarms go to `echo` and to the ledger at
    `ledger_path`. When the block exits (any way) the job is over: the watchdog checks that the
    job left its final row, and goes on watching the box for `after_minutes` (0: it stops at
    once), outliving this process; it writes its lines to a log beside the ledger
    (`skillos ledger watch` lists it). Yields the watchdog's process."""
    import subprocess
    import threading

    folder = Path(ledger_path).parent / "watches"
    folder.mkdir(parents=True, exist_ok=True)
    stem = tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-"), dir=folder)  # one name per watch
    log, done = Path(stem) / "watch.log", Path(stem) / "job.done"
    log.touch()
    argv = command(pids or [os.getpid()], paths, ledger_path, stall_minutes, gpus, interval_s,
                   idle_minutes=_idle_minutes(after_minutes), stop_on=stop_on, after_minutes=after_minutes,
                   done_file=done, log=log, since=now())  # the job's runs begin from here
    dog = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                           start_new_session=True)  # a Ctrl-C to the job does not stop its watch, nor its end
    stop = threading.Event()

    def relay():
        with log.open() as lines:
            while True:
                line = lines.readline()
                if not line:
                    if stop.is_set():
                        return
                    stop.wait(0.05)
                    continue
                if line.startswith(("ALARM", "STOP")):
                    echo(line.rstrip("\n"))

    thread = threading.Thread(target=relay, name="skillos-watchdog-relay", daemon=True)
    thread.start()
    try:
        yield dog
    finally:
        done.touch()  # the job is over: the watchdog's last looks at it, and the watch after it
        stopped_by_us = False
        if not after_minutes:
            try:
                dog.wait(timeout=15)  # its final look: did the job leave its final row?
            except subprocess.TimeoutExpired:
                stopped_by_us = True
                dog.terminate()
                try:
                    dog.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    dog.kill()
        stop.set()
        thread.join(timeout=5)
        if dog.poll() not in (None, 0) and not stopped_by_us:  # a watch that failed is said, not trusted
            echo(f"gate 7: the watchdog (pid {dog.pid}) exited with status {dog.returncode}: this job was not "
                 f"watched to its end; its log {log}")
        elif after_minutes:
            echo(f"gate 7: the watchdog (pid {dog.pid}) goes on watching the box for {after_minutes:g} min after "
                 f"this job, then stops itself; its alarms go to the ledger (skillos ledger watch; its log {log})")
