"""compute.backend ray (evals/distributed.py) on a local Ray cluster on the CPU: an eval's rows
are a local run's; a sweep whose worker is killed finishes with a local sweep's rows; a resume
does not submit the arms the run folder holds in full; a missing install is one line naming the
extra."""

import json
import os
import shutil
import sys
import time

import pytest
import yaml

from conftest import ROOT, run_cli

pytest.importorskip("alfworld", reason="needs the [alfworld] extra")
pytestmark = pytest.mark.alfworld
SIZE = ["env.n_games=3", "env.n_train_games=3"]


def rows(out) -> dict:
    """Every row and trace of a run folder, each once, keyed by (file, arm, phase, game)."""
    found = {}
    for name in ("games.jsonl", "curation.jsonl", "trajectories.jsonl"):
        path = out / name
        for line in path.read_text().splitlines() if path.exists() else []:
            r = json.loads(line)
            key = (name, r["arm"], r["phase"], r["game_id"])
            assert key not in found, f"{key} recorded twice"
            found[key] = r
    return found


def repo_files(folder) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_a_matrix_on_a_cluster_the_cli_starts_has_the_rows_of_a_local_matrix(tmp_path, game_cache):
    """`skillos eval` starts a local cluster itself (one for the matrix's runs, stopped after)."""
    import skillos

    seeds = ["experiment.seeds=[0, 1]", "eval.workers=2"]
    local = skillos.evaluate(quickstart(*seeds), out=tmp_path / "local")
    sets = [x for s in (*SIZE, *seeds, "compute.backend=ray") for x in ("--set", s)]
    result = run_cli("eval", ROOT / "evals" / "configs" / "quickstart.yaml", *sets, "--json", "--out", tmp_path / "ray")
    assert result.returncode == 0, result.stderr[-2000:]
    on_ray = json.loads(result.stdout)
    labels = [r["label"] for r in local["matrix"]["runs"]]
    assert labels == ["seed-0", "seed-1"] and [r["label"] for r in on_ray["matrix"]["runs"]] == labels
    for label in labels:
        assert rows(tmp_path / "ray" / label) == rows(tmp_path / "local" / label)
    assert on_ray["matrix"]["rows"] == json.loads(json.dumps(local["matrix"]["rows"]))


@pytest.fixture(scope="module")
def cluster(game_cache):
    """One local cluster for the module (its start is ~10 s on 2 cores), stopped after it. The
    workers inherit SKILLOS_CACHE, so they read the games the driver generated."""
    ray = pytest.importorskip("ray", reason="needs the [ray] extra")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def quickstart(*sets):
    from skillos import config as cfgmod

    return cfgmod.load(ROOT / "evals" / "configs" / "quickstart.yaml", [*SIZE, *sets])


@pytest.fixture(scope="module")
def evals(cluster, tmp_path_factory):
    """The same eval (no_memory, closed_loop) run locally, and on the cluster gated and recorded."""
    from skillos import api
    from skillos.evals.experiment import run_eval
    from skillos.ledger import Ledger

    folder = tmp_path_factory.mktemp("ray-eval")
    local = run_eval(quickstart(), folder / "local")
    with Ledger(folder / "ledger.db") as book:
        on_ray = api.evaluate(quickstart("compute.backend=ray"), out=folder / "ray", ledger=book)
    return folder, local, on_ray


@pytest.mark.slow  # the cluster's start (~10 s on 2 cores) and the games' generation land here
def test_an_eval_on_ray_gives_the_rows_of_a_local_run(evals):
    folder, local, on_ray = evals
    assert rows(folder / "ray") == rows(folder / "local") and len(rows(folder / "local")) == 3 * 2 + 3 + 9
    assert repo_files(folder / "ray" / "repo-closed_loop") == repo_files(folder / "local" / "repo-closed_loop")
    assert on_ray["arms"] == local["arms"] and on_ray["comparisons"] == local["comparisons"]
    assert on_ray["config_hash"] == local["config_hash"]  # where it ran is not what it measured


@pytest.mark.slow
def test_a_resume_on_ray_submits_only_the_arms_not_complete(evals, tmp_path):
    """no_memory lost its last row (a kill); closed_loop finished: only no_memory is submitted,
    it plays the one missing game, and the folder ends with the uninterrupted run's rows."""
    from skillos.evals.experiment import run_eval

    folder, _, _ = evals
    out = tmp_path / "resumed"
    shutil.copytree(folder / "ray", out)
    (out / "report.json").unlink()
    games = (out / "games.jsonl").read_text().splitlines()
    lost = next(i for i in reversed(range(len(games))) if json.loads(games[i])["arm"] == "no_memory")
    (out / "games.jsonl").write_text("".join(line + "\n" for i, line in enumerate(games) if i != lost))
    repo_before = repo_files(out / "repo-closed_loop")
    events = []
    result = run_eval(quickstart("compute.backend=ray"), out, progress=lambda *e: events.append(e), resume=True)
    assert [(arm, done, total) for arm, _, done, total, live in events if live == "submitted to ray"] == [
        ("no_memory", 2, 3)]
    assert rows(out) == rows(folder / "ray") and result["arms"]["no_memory"]["attempted"] == 3
    assert repo_files(out / "repo-closed_loop") == repo_before


def skill_repo(folder, body):
    (folder / "where-to-find-mug").mkdir(parents=True)
    (folder / "where-to-find-mug" / "SKILL.md").write_text(
        f"---\nname: where-to-find-mug\ndescription: Where mugs were found.\n---\n{body}\n")
    return folder


def killing_once(marker, arm):
    """A task body that kills its worker process the first time it plays `arm` (the marker file
    says it did); Ray runs the task again on a new worker, which plays the arm."""
    def unit(cfg, name, *args):
        if name == arm and not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)  # the worker dies mid-task, as a lost machine would
        from skillos.evals.distributed import play_unit

        return play_unit(cfg, name, *args)

    return unit


@pytest.mark.slow
def test_a_sweep_with_a_killed_worker_finishes_with_the_rows_of_a_local_sweep(cluster, tmp_path, monkeypatch):
    from skillos import api
    from skillos.evals import distributed

    repos = [skill_repo(tmp_path / "checkpoint-10", ""),
             skill_repo(tmp_path / "checkpoint-20", "Mugs are in the cabinet.")]
    sweep = dict(executor="heuristic", repos=repos)
    local = api.sweep(quickstart(), out=tmp_path / "local", **sweep)
    marker = tmp_path / "killed-once"
    monkeypatch.setattr(distributed, "play_unit", killing_once(str(marker), "repo:checkpoint-20"))
    on_ray = api.sweep(quickstart("compute.backend=ray", "compute.ray_max_retries=2"), out=tmp_path / "ray", **sweep)
    assert marker.exists()  # the worker was killed, and the task ran again
    assert rows(tmp_path / "ray") == rows(tmp_path / "local") and len(rows(tmp_path / "local")) == 3 * 3 * 2
    assert on_ray["sweep"]["rows"] == local["sweep"]["rows"]


def test_the_sweep_dry_run_shows_the_ray_plan(tmp_path):
    repo = skill_repo(tmp_path / "checkpoint-10", "")
    result = run_cli("sweep", ROOT / "evals" / "configs" / "quickstart.yaml", "--repo", repo, "--executor",
                     "heuristic", "--dry-run", "--set", "compute.backend=ray", "--set", "compute.ray_max_retries=5")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ray: 2 tasks on a local cluster started for the run" in result.stdout
    assert "run again up to 5 times" in result.stdout and "  repo:checkpoint-10: 1 CPU, 0 GPU" in result.stdout


def test_a_task_reserves_a_gpu_only_for_a_model_it_runs(tmp_path):
    from skillos.evals.distributed import task_resources

    assert task_resources(quickstart("compute.backend=ray", "compute.gpu=H100:8"), "closed_loop")["num_gpus"] == 0
    hf = quickstart("compute.backend=ray", "compute.gpu=H100:8", "executor.backend=hf", "executor.model=m")
    assert task_resources(hf, "no_memory") == {"num_cpus": 1, "num_gpus": 1}
    assert task_resources(quickstart("executor.backend=hf", "executor.model=m"), "no_memory")["num_gpus"] == 0
    set_by_hand = quickstart("compute.backend=ray", "compute.ray_gpus_per_task=0.5")
    assert task_resources(set_by_hand, "no_memory")["num_gpus"] == 0.5


def test_ray_missing_is_one_line_naming_the_extra(monkeypatch):
    from skillos import gates
    from skillos.errors import SkillosError
    from skillos.evals import distributed

    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` sees without the install
    with pytest.raises(SkillosError, match=r"^compute.backend ray needs Ray, which is not installed: "
                                           r"pip install 'skillos\[ray\]'$"):
        distributed.require_ray()
    extras = [r for r in gates.check(quickstart("compute.backend=ray")).results if r.check == "extras"]
    failed = [r for r in extras if r.status == "FAIL"]
    assert len(failed) == 1 and failed[0].key == "compute.backend ray" and "skillos[ray]" in failed[0].detail
    monkeypatch.delitem(sys.modules, "ray")
    assert all(r.status != "FAIL" for r in gates.check(quickstart()).results if r.check == "extras")


def test_training_is_not_launched_on_ray():
    from skillos.errors import SkillosError
    from skillos.training.common import launch

    cfg = quickstart("compute.backend=ray")
    with pytest.raises(SkillosError, match="training launches on local, accelerate, modal"):
        launch.plan(cfg, "c.yaml")


def aborting(arm):
    def unit(cfg, name, *args):
        from skillos.evals.runner import ArmAborted

        if name == arm:
            raise ArmAborted(f"arm {name} aborted in its eval games: 20 of 20 games unmeasured")
        from skillos.evals.distributed import play_unit

        return play_unit(cfg, name, *args)

    return unit


@pytest.mark.slow
def test_an_arm_that_aborts_on_ray_is_its_one_line_error_and_is_not_retried(cluster, tmp_path, monkeypatch):
    """An error the arm raises is the driver's error, as a local run raises it (exit 3 for an
    outage), not a worker loss to retry; nothing of the aborted arm is written."""
    from skillos.evals import distributed
    from skillos.evals.experiment import run_eval
    from skillos.evals.runner import ArmAborted

    monkeypatch.setattr(distributed, "play_unit", aborting("closed_loop"))
    cfg = quickstart("compute.backend=ray")
    with pytest.raises(ArmAborted, match=r"^arm closed_loop aborted in its eval games: 20 of 20 games unmeasured$"):
        run_eval(cfg, tmp_path / "run")
    assert {key[1] for key in rows(tmp_path / "run")} <= {"no_memory"}


def killing_run_once(marker, folder_name):
    """training.canary._quiet_work (a canary's task body), killing its worker process the first
    time the run whose folder is `folder_name` reports progress after saving its state (state.json):
    Ray runs the task again on a new worker, which continues the folder."""
    from skillos.training.canary import _stamped

    def task(work, digest, signal, folder):
        def echo(_line):
            if folder.name == folder_name and (folder / "state.json").exists() and not os.path.exists(marker):
                open(marker, "w").close()
                os._exit(1)  # the worker dies mid-run, with a saved step behind it

        return _stamped(work, digest, signal, folder, echo)

    return task


def run_files(folder) -> dict:
    """A run folder's files, its own path written as ROOT (reports name their folder); no lock (a PID)."""
    return {k: v.replace(str(folder).encode(), b"ROOT") for k, v in repo_files(folder).items()
            if not k.endswith(".lock")}


@pytest.mark.slow
def test_a_canary_on_ray_with_a_killed_worker_measures_what_it_measures_locally(cluster, tmp_path, monkeypatch,
                                                                              skillos_home):
    """The optimize canary's trained run and negative controls as Ray tasks; the control's worker
    is killed once mid-run: the canary's result and the files of both runs are the local canary's,
    and the driver recorded it in its ledger. A rerun into a finished canary's folder reuses its
    runs."""
    from skillos import api
    from skillos.config import identity
    from skillos.ledger import Ledger
    from skillos.training import canary

    local = api.canary("optimize", quick=True, out=tmp_path / "local")
    marker = tmp_path / "killed-once"
    monkeypatch.setattr(canary, "_quiet_work", killing_run_once(str(marker), "control"))
    lines = []
    on_ray = api.canary("optimize", quick=True, out=tmp_path / "ray", echo=lines.append,
                        sets=["compute.backend=ray", "compute.ray_max_retries=1"])
    assert marker.exists()  # the control's worker died, and its task ran again
    assert "3 Ray tasks submitted: the trained run and its negative controls (shuffled, sign-flipped)" in lines
    assert sorted(x.partition(" finished")[0] for x in lines if "finished on ray" in x) == [
        "canary control run", "canary flipped run", "canary trained run"]
    # where and how long it ran; Ray's run imports Ray's modules too
    varies = {"compute", "wall_s", "machine", "output_dir", "code_hash", "identity"}
    assert on_ray["machine"]["backend"] == "ray" and local["machine"]["backend"] == "local"
    assert {k: v for k, v in on_ray.items() if k not in varies} == {k: v for k, v in local.items() if k not in varies}
    assert on_ray["compute"] == ["compute.backend=ray", "compute.ray_max_retries=1"] and local["compute"] == []
    for run in ("trained", "control", "flipped"):
        ray_files, local_files = (run_files(tmp_path / where / "seed-0" / run) for where in ("ray", "local"))
        configs = [identity(yaml.safe_load(files.pop("config.yaml"))) for files in (ray_files, local_files)]
        assert configs[0] == configs[1]  # the same run; where it ran aside
        for files in (ray_files, local_files):  # each stamped with what made it, checked below
            files.pop(canary.identity.IDENTITY)
        assert ray_files == local_files and {"report.json", "history.jsonl"} <= set(local_files)
    assert "skillos.evals.distributed" in on_ray["identity"]["modules"]
    assert canary.identity.changes(on_ray["identity"], on_ray["identity"]["config"]) == []
    with Ledger(skillos_home / "ledger.db") as ledger:
        assert [r["passed"] for r in ledger.canaries("optimize")] == [local["passed"], on_ray["passed"]]
    again = api.canary("optimize", quick=True, out=tmp_path / "ray", sets=["compute.backend=ray"])
    assert {k: v for k, v in again.items() if k not in varies} == {k: v for k, v in local.items() if k not in varies}


@pytest.mark.slow
def test_a_run_begun_locally_resumes_on_ray(evals, tmp_path):
    """Where a run executes is not what it measures: a local run killed after some rows continues on
    Ray (its config.yaml differs only in compute.backend) and ends with the local run's rows."""
    from skillos.evals.experiment import run_eval

    folder, _, _ = evals
    out = tmp_path / "resumed"
    shutil.copytree(folder / "local", out)
    games = (out / "games.jsonl").read_text().splitlines()
    (out / "games.jsonl").write_text("".join(line + "\n" for line in games[:-1]))
    (out / "report.json").unlink(missing_ok=True)
    run_eval(quickstart("compute.backend=ray", "eval.workers=2"), out, resume=True)
    assert rows(out) == rows(folder / "local")


def test_a_resume_compares_what_a_run_measures_not_where_it_ran(tmp_path):
    from skillos.evals import run_folder
    from skillos.files import write_atomic

    write_atomic(tmp_path / run_folder.CONFIG, run_folder.config_text(quickstart()))
    assert run_folder.same_config(tmp_path, quickstart("compute.backend=ray", "compute.ray_max_retries=1",
                                                       "eval.workers=3"))
    assert not run_folder.same_config(tmp_path, quickstart("env.n_games=4"))
    assert not run_folder.same_config(tmp_path, quickstart("compute.backend=modal"))


def test_a_ray_address_is_checked_when_the_config_loads_and_reached_with_a_timeout():
    import socket

    from skillos.errors import ConfigError, SkillosError
    from skillos.evals.distributed import reach

    for bad in ("http://head:10001", "ray://head", "10.0.0.1", "a b:1"):
        with pytest.raises(ConfigError, match="compute.ray_address: .* expected auto, HOST:PORT or ray://HOST:PORT"):
            quickstart(f"compute.ray_address={bad}")
    assert quickstart("compute.ray_address=ray://head.example:10001").compute.ray_address == "ray://head.example:10001"
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with pytest.raises(SkillosError, match=f"compute.ray_address ray://127.0.0.1:{port}: no Ray cluster answers"):
        reach(f"ray://127.0.0.1:{port}", timeout_s=2)
    reach(None), reach("auto")  # a local cluster, or Ray's own discovery: nothing to probe


@pytest.mark.parametrize("greeting", [b"SSH-2.0-OpenSSH_9.6\r\n", b"HTTP/1.1 400 Bad Request\r\n\r\n", b""])
def test_an_address_where_something_that_is_not_ray_listens_is_refused_in_one_line_within_the_bound(greeting):
    import socket
    import threading
    import time

    from skillos.errors import SkillosError
    from skillos.evals.distributed import reach

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]

    def answer():  # greets (or stays silent) and holds the connection open, as a wedged server would
        conn, _ = server.accept()
        if greeting:
            conn.sendall(greeting)
        time.sleep(3)
        conn.close()

    threading.Thread(target=answer, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(SkillosError, match=f"compute.ray_address 127.0.0.1:{port}: something listens there but it "
                                           "is not a Ray cluster") as caught:
        reach(f"127.0.0.1:{port}", timeout_s=1)
    assert time.monotonic() - started < 2.5 and "\n" not in str(caught.value)
    assert (greeting[:7].decode() if greeting else "nothing within 1 s") in str(caught.value)
    server.close()


@pytest.mark.slow
def test_a_real_ray_head_passes_the_handshake_on_its_gcs_and_client_ports():
    import signal
    import socket
    import subprocess
    import tempfile

    from skillos.errors import SkillosError
    from skillos.evals.distributed import reach

    ports = []
    for _ in range(2):
        with socket.socket() as free:
            free.bind(("127.0.0.1", 0))
            ports.append(free.getsockname()[1])
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Ray's socket paths must stay short
    # --block: the head lives as long as this process, so stopping it leaves other clusters alone
    head = subprocess.Popen(["ray", "start", "--head", "--block", f"--port={ports[0]}",
                             f"--ray-client-server-port={ports[1]}", "--num-cpus=1", "--include-dashboard=false",
                             f"--temp-dir={temp}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        for address in (f"127.0.0.1:{ports[0]}", f"ray://127.0.0.1:{ports[1]}"):
            for attempt in range(120):  # each server answers once the head has started it
                try:
                    reach(address, timeout_s=10)
                    break
                except SkillosError as exc:
                    if "something listens" in str(exc) or attempt == 119 or head.poll() is not None:
                        raise
                    time.sleep(1)
    finally:
        os.killpg(head.pid, signal.SIGTERM)
        head.wait(timeout=60)
        shutil.rmtree(temp, ignore_errors=True)
