"""The watchdog on a fake clock with fake probes: stalls, exits and an idle box reach the ledger."""

from skillos.ledger import Ledger
from skillos.ledger.watchdog import SystemProbes, Watchdog, WatchConfig


class FakeClock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t

    def minutes(self, m):
        self.t += 60 * m


class FakeProbes:
    def __init__(self):
        self.pids_alive, self.sizes, self.busy = {1: True}, {"train.log": 0}, 95.0

    def alive(self, pid):
        return self.pids_alive.get(pid, False)

    def size(self, path):
        return self.sizes.get(path)

    def busy_percent(self):
        return self.busy


def make(tmp_path, **config):
    clock, probes = FakeClock(), FakeProbes()
    ledger = Ledger(tmp_path / "l.db")
    lines = []
    dog = Watchdog(WatchConfig(pids=[1], paths=["train.log"], stall_minutes=15, idle_minutes=10,
                               gpus=8, **config), probes, clock, ledger, lines.append)
    return dog, clock, probes, ledger, lines


def test_healthy_job_raises_nothing(tmp_path):
    dog, clock, probes, ledger, _ = make(tmp_path)
    for _ in range(30):
        probes.sizes["train.log"] += 100
        clock.minutes(1)
        assert dog.tick() == []
    assert ledger.failures() == []


def test_stalled_log_alarms_once(tmp_path):
    dog, clock, probes, ledger, lines = make(tmp_path)
    dog.tick()
    kinds = []
    for _ in range(40):  # the process lives, the log never grows
        clock.minutes(1)
        kinds += [a.kind for a in dog.tick()]
    assert kinds == ["stall"]
    assert lines == ["ALARM [stall] train.log has not grown for 15 min while the job is alive"]
    (failure,) = ledger.failures()
    assert failure["detected_by"] == "watchdog" and failure["gate"] == "7"


def test_idle_box_after_the_job_ends_lands_in_the_ledger(tmp_path):
    dog, clock, probes, ledger, lines = make(tmp_path)
    for _ in range(5):
        probes.sizes["train.log"] += 10
        clock.minutes(1)
        dog.tick()
    probes.pids_alive[1] = False  # the job ends; nothing else is queued
    probes.busy = 0.0
    raised = []
    for _ in range(30):
        clock.minutes(1)
        raised += dog.tick()
    assert [a.kind for a in raised] == ["process-exited", "box-idle"]
    idle = raised[1]
    assert idle.minutes == 10
    (failure,) = ledger.failures()
    assert failure["category"] == "wasted-compute" and failure["modes"] == ["job-not-box"]
    assert failure["cost_wall_hours"] == 10 / 60 and failure["cost_gpu_hours"] == 8 * 10 / 60
    assert "idle for 10 min" in failure["what"]


def test_device_idle_while_the_job_claims_to_run(tmp_path):
    dog, clock, probes, ledger, _ = make(tmp_path)
    probes.busy = 1.0  # GPUs at 1% while the process lives and its log grows
    raised = []
    for _ in range(20):
        probes.sizes["train.log"] += 10
        clock.minutes(1)
        raised += dog.tick()
    assert [a.kind for a in raised] == ["device-idle"]


def test_unmeasured_device_is_never_called_idle(tmp_path):
    dog, clock, probes, ledger, _ = make(tmp_path)
    probes.busy = None  # no GPU and no CPU reading
    probes.pids_alive[1] = False
    raised = []
    for _ in range(60):
        clock.minutes(1)
        raised += dog.tick()
    assert [a.kind for a in raised] == ["process-exited"]


def test_run_stops_at_box_idle_with_a_fake_sleep(tmp_path):
    dog, clock, probes, ledger, _ = make(tmp_path)
    probes.pids_alive[1] = False
    probes.busy = 0.0
    alarms = dog.run(interval_s=60, max_ticks=100, sleep=lambda s: clock.minutes(s / 60))
    assert [a.kind for a in alarms] == ["process-exited", "box-idle"]


def test_system_probes_on_this_machine(tmp_path):
    import os

    probes = SystemProbes()
    assert probes.alive(os.getpid()) and not probes.alive(2 ** 22 + 12345)
    log = tmp_path / "x.log"
    assert probes.size(str(log)) is None
    log.write_text("abc")
    assert probes.size(str(log)) == 3 and probes.size(str(tmp_path)) == 3
    probes.busy_percent()
    second = probes.busy_percent()
    assert second is None or 0.0 <= second <= 100.0


def test_watch_cli_on_a_finished_job(skillos_home):
    import json

    from conftest import run_cli

    result = run_cli("watch", "--pid", "4194303", "--idle-minutes", "0", "--busy-percent", "101",
                     "--interval", "0.05", "--max-ticks", "20")
    assert result.returncode == 0, result.stderr
    assert "ALARM [box-idle]" in result.stdout and "1 recorded" in result.stdout
    failures = json.loads(run_cli("ledger", "failures", "list", "--json").stdout)["failures"]
    assert [f["detected_by"] for f in failures] == ["watchdog"]
    assert run_cli("watch").returncode == 2


def test_a_launch_runs_under_the_watchdog(tmp_path):
    """Gate 7 on the launch path: `watching` ticks in the background and a stalled output
    folder becomes an alarm in the ledger while the job is still alive."""
    import time

    from skillos.ledger import Ledger
    from skillos.ledger.watchdog import watching

    out = tmp_path / "run"
    out.mkdir()
    lines = []
    with watching([out], tmp_path / "ledger.db", stall_minutes=0.001, interval_s=0.05,
                  echo=lines.append):
        deadline = time.monotonic() + 10
        while not any("[stall]" in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert any(line.startswith(f"ALARM [stall] {out} has not grown") for line in lines)
    with Ledger(tmp_path / "ledger.db") as ledger:
        stalls = [f for f in ledger.failures() if "stall" in f["what"]]
        assert len(stalls) == 1 and stalls[0]["detected_by"] == "watchdog" and stalls[0]["gate"] == "7"


class StoppableProbes(FakeProbes):
    def __init__(self):
        super().__init__()
        self.stopped = []

    def stop(self, pids, grace_s):
        for pid in pids:
            self.stopped.append(pid)
            self.pids_alive[pid] = False


def test_the_configured_rule_stops_a_stalled_launch_and_says_so_in_the_ledger(tmp_path):
    clock, probes = FakeClock(), StoppableProbes()
    ledger = Ledger(tmp_path / "l.db")
    lines = []
    dog = Watchdog(WatchConfig(pids=[1], paths=["train.log"], stall_minutes=15, gpus=8, stop_on=["stall"]),
                   probes, clock, ledger, lines.append)
    dog.tick()
    for _ in range(20):
        clock.minutes(1)
        dog.tick()
    assert probes.stopped == [1] and dog.stopped == "stall"
    assert "STOP [stall] stopping the job's processes [1] (compute.stop_on)" in lines
    (failure,) = ledger.failures()
    assert "the launch was stopped (compute.stop_on)" in failure["what"]
    # the same stall without the rule alarms and records, and stops nothing
    quiet = StoppableProbes()
    dog = Watchdog(WatchConfig(pids=[1], paths=["train.log"], stall_minutes=15), quiet, clock, None, lines.append)
    dog.tick()
    clock.minutes(20)
    assert [a.kind for a in dog.tick()] == ["stall"] and quiet.stopped == [] and dog.stopped is None


def test_skillos_watch_stops_a_real_stalled_process(tmp_path, skillos_home):
    import subprocess
    import sys

    from conftest import run_cli

    job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        (tmp_path / "out").mkdir()
        result = run_cli("watch", "--pid", str(job.pid), "--path", tmp_path / "out", "--stall-minutes", "0.005",
                         "--interval", "0.5", "--max-ticks", "6", "--stop-on", "stall", "--busy-percent", "0")
        assert result.returncode == 0, result.stderr
        assert job.wait(timeout=30) is not None  # SIGTERM reached it
        assert "STOP [stall]" in result.stdout
        with Ledger(skillos_home / "ledger.db") as ledger:
            assert any("the launch was stopped" in f["what"] for f in ledger.failures())
        refused = run_cli("watch", "--pid", str(job.pid), "--stop-on", "stal")
        assert refused.returncode == 2 and "--stop-on stal: not one of stall, device-idle" in refused.stderr
    finally:
        job.kill()


def test_the_watch_goes_on_after_the_job_and_stops_itself(tmp_path):
    """compute.watch_after_minutes: a job that ended leaves the watch looking at the box; GPUs
    idle 10 min after it alarm; a busy box (another job's) is watched for the whole window, then
    the watchdog stops itself, and its row in the ledger says so."""
    dog, clock, probes, ledger, lines = make(tmp_path, after_minutes=30)
    dog.start()
    probes.pids_alive[1] = False  # the job ended
    started = clock()
    alarms = dog.run(interval_s=60, max_ticks=1000, sleep=lambda s: clock.minutes(s / 60))
    assert [a.kind for a in alarms] == ["process-exited"]  # the box stayed busy: nothing idle
    assert 30 <= (clock() - started) / 60 <= 32  # it watched the whole window after the job, then stopped
    (watch,) = ledger.watches()
    assert watch["state"] == "ended" and watch["job_ended_at"] and "30 min" in watch["detail"]

    dog, clock, probes, ledger, _ = make(tmp_path / "idle", after_minutes=30)
    dog.start()
    probes.pids_alive[1], probes.busy = False, 0.0  # the job died and its GPUs sit idle
    alarms = dog.run(interval_s=60, max_ticks=1000, sleep=lambda s: clock.minutes(s / 60))
    assert [a.kind for a in alarms] == ["process-exited", "box-idle"]
    assert [f["gate"] for f in ledger.failures()] == ["7"]


def test_a_job_that_died_without_its_final_row_is_an_alarm(tmp_path):
    """A run of this host begun since the watch started, still [running] while the process that
    wrote it is gone, is an alarm in the ledger naming the run; a run that ended is not."""
    import subprocess
    import sys

    path = tmp_path / "l.db"
    dog, clock, probes, ledger, lines = make(tmp_path)
    dog.start()
    write = ("import os, sys; from skillos.ledger import Ledger; l = Ledger(sys.argv[1]); "
             "r = l.start_run(None, config={{}}); {end}; os._exit(0)")
    subprocess.run([sys.executable, "-c", write.format(end="l.end_run(r)"), str(path)], check=True)
    subprocess.run([sys.executable, "-c", write.format(end="pass"), str(path)], check=True)  # killed mid-run
    running = [r for r in ledger.rows("runs") if r["status"] == "running"]
    assert len(running) == 1
    probes.pids_alive[1] = False
    raised = dog.tick()
    assert [a.kind for a in raised] == ["process-exited", "job-died"]
    assert f"run #{running[0]['id']} is still [running]" in raised[1].message
    (failure,) = ledger.failures()
    assert failure["run_id"] == running[0]["id"] and failure["detected_by"] == "watchdog"
    assert dog.tick() == []  # said once


def _watch_rows(path) -> list:
    """The watches recorded in the ledger at `path` (none while its file or table is not there)."""
    if not path.exists():
        return []
    with Ledger(path) as ledger:
        return ledger.watches()


def test_a_launch_watch_outlives_its_job_and_a_kill_is_recorded(tmp_path, skillos_home):
    """The real watchdog process beside a job killed mid-run: after the launch's block exits the
    watchdog is still watching (`ledger watch` lists it live), records that the job died without
    its final row, and stops itself when its window after the job is over."""
    import json
    import subprocess
    import sys
    import time

    from conftest import run_cli
    from skillos.ledger.watchdog import watching

    path = skillos_home / "ledger.db"
    job = subprocess.Popen([sys.executable, "-c", "import sys, time; from skillos.ledger import Ledger; "
                            "Ledger(sys.argv[1]).start_run(None, config={}); print('run', flush=True); time.sleep(600)",
                            str(path)], stdout=subprocess.PIPE, text=True)
    lines = []
    with watching([tmp_path], path, stall_minutes=60, interval_s=0.1, echo=lines.append, pids=[job.pid],
                  after_minutes=0.25) as dog:  # 15 s: room for the CLI below to start on a loaded machine
        assert job.stdout.readline().strip() == "run"
        deadline = time.monotonic() + 60  # its own process is starting: the kill comes once it watches
        while not _watch_rows(path) and time.monotonic() < deadline and dog.poll() is None:
            time.sleep(0.1)
        job.kill()
        job.wait()
    assert dog.poll() is None  # the launch is over; its watch is not
    live = json.loads(run_cli("ledger", "watch", "--live", "--json").stdout)
    assert [w["watcher_pid"] for w in live] == [dog.pid] and live[0]["after_minutes"] == 0.25
    assert dog.wait(timeout=60) == 0  # it stops itself
    (watch,) = json.loads(run_cli("ledger", "watch", "--json").stdout)
    assert watch["state"] == "ended" and watch["alarms"] >= 1 and watch["job_ended_at"]
    with Ledger(path) as ledger:
        (died,) = [f for f in ledger.failures() if "without its final row" in f["what"]]
    assert died["gate"] == "7" and died["run_id"] is not None
    assert run_cli("ledger", "watch", "--live").stdout.strip() == "no watch recorded"


def test_a_launch_watches_after_its_job_only_where_gpus_can_sit_idle():
    from skillos.config.loading import with_sets
    from skillos.config.schema import Config
    from skillos.ledger.watchdog import launch_watch

    cpu = launch_watch(Config(), ["out"], "here")
    assert cpu["after_minutes"] == 0 and "no accelerators" in cpu["after"]
    gpus = launch_watch(with_sets(Config(), ["compute.gpu=H100:2", "compute.watch_after_minutes=45"]), ["out"], "here")
    assert gpus["after_minutes"] == 45 and "--after-minutes" in gpus["command"] and "2 GPU(s)" in gpus["after"]
    modal = launch_watch(with_sets(Config(), ["compute.gpu=H100:2", "compute.backend=modal"]), ["out"], "here")
    assert modal["after_minutes"] == 0 and "ends with the job" in modal["after"]


def test_a_watchdog_that_fails_is_said_at_the_launchs_end(tmp_path):
    """Gate 7 is a fact, not a hope: a watchdog process that could not watch (here its ledger is a
    folder) is named at the end of the launch with its status and log, not passed over."""
    from skillos.ledger.watchdog import watching

    ledger = tmp_path / "ledger.db"
    ledger.mkdir()
    lines = []
    with watching([tmp_path], ledger, stall_minutes=60, interval_s=0.1, echo=lines.append):
        pass
    (said,) = [line for line in lines if "exited with status" in line]
    assert "was not watched to its end" in said and "watch.log" in said
