"""compute.backend ray on a multi-node cluster simulated on this machine (Ray's own
`ray.cluster_utils.Cluster`: a head with no CPUs for tasks and two 1-CPU worker nodes, each its own
raylet and object store), joined the way a user joins one, through compute.ray_address: a sweep
whose node is killed mid-run (its raylet and workers SIGKILLed, as a lost machine) finishes on the
surviving node with the rows of a local sweep; a node lost more often than compute.ray_max_retries
allows is the one-line error of a lost worker."""

import json
import os
import threading
import time
import uuid

import pytest

from test_ray import quickstart, rows, skill_repo

pytest.importorskip("alfworld", reason="needs the [alfworld] extra")
pytestmark = pytest.mark.alfworld
WAIT_S = 120  # how long a blocked task or the killer waits before the test gives up


@pytest.fixture(scope="module")
def nodes(game_cache):
    """A head node with no CPUs (no task runs there) and two worker nodes of 1 CPU: three arms
    start two at once, one on each node. The raylets inherit SKILLOS_CACHE, so their workers read
    the games the driver generated. Stopped after the module: the driver first, then every node."""
    ray = pytest.importorskip("ray", reason="needs the [ray] extra")
    from ray.cluster_utils import Cluster

    if ray.is_initialized():  # skillos must join through compute.ray_address, not a cluster this process holds
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def held_until_go(folder):
    """A task body that records each attempt (its arm and the node it runs on) in `folder` and,
    until the test writes `go`, waits before playing: the two first tasks are running, one on
    each node, when a node is killed."""
    def unit(cfg, name, *args):
        import ray

        node = ray.get_runtime_context().get_node_id()
        path = os.path.join(folder, uuid.uuid4().hex)
        with open(path + ".tmp", "w") as f:  # whole or absent: the killer thread reads the folder meanwhile
            json.dump({"arm": name, "node": node, "t": time.time()}, f)
        os.replace(path + ".tmp", path)
        deadline = time.time() + WAIT_S
        while not os.path.exists(os.path.join(folder, "go")):
            if time.time() > deadline:
                raise RuntimeError("the test never released the task")
            time.sleep(0.05)
        from skillos.evals.distributed import play_unit

        return play_unit(cfg, name, *args)

    return unit


def attempts(folder) -> list:
    names = [n for n in os.listdir(folder) if n != "go" and not n.endswith(".tmp")]
    return sorted((json.loads((folder / n).read_text()) for n in names),
                  key=lambda a: a["t"])


def kill_a_node_mid_sweep(cluster, folder, killed: list) -> None:
    """Once two tasks run, SIGKILL the worker node of one of them (not the node the driver joined
    through: on one machine Ray may attach the driver to any node at its IP), then release the
    tasks. Whatever happens, the tasks are released."""
    import ray

    try:
        deadline = time.time() + WAIT_S
        while len(attempts(folder)) < 2:
            assert time.time() < deadline, "two tasks never started"
            time.sleep(0.05)
        driver = ray.get_runtime_context().get_node_id()
        running = attempts(folder)
        victim = next(a for a in running if a["node"] != driver)
        node = next(n for n in cluster.worker_nodes if n.node_id == victim["node"])
        cluster.remove_node(node, allow_graceful=False)
        killed.append(victim)
    except BaseException as exc:
        killed.append(exc)
    finally:
        (folder / "go").touch()


def sweep_with_a_node_killed(cluster, tmp_path, monkeypatch, cfg, sweep):
    """`api.sweep` through compute.ray_address while a thread kills one node; the attempts and the
    attempt that was killed."""
    from skillos import api
    from skillos.evals import distributed

    folder = tmp_path / "attempts"
    folder.mkdir()
    monkeypatch.setattr(distributed, "play_unit", held_until_go(str(folder)))
    killed = []
    killer = threading.Thread(target=kill_a_node_mid_sweep, args=(cluster, folder, killed), daemon=True)
    killer.start()
    try:
        return api.sweep(cfg, out=tmp_path / "ray", **sweep), attempts(folder), killed
    finally:
        (folder / "go").touch()
        killer.join(WAIT_S)


@pytest.mark.slow
def test_a_sweep_whose_node_is_killed_finishes_on_the_other_node_with_the_rows_of_a_local_sweep(
        nodes, tmp_path, monkeypatch):
    from skillos import api

    sweep = dict(executor="heuristic", repos=[skill_repo(tmp_path / "checkpoint-10", ""),
                                              skill_repo(tmp_path / "checkpoint-20", "Mugs are in the cabinet.")])
    local = api.sweep(quickstart(), out=tmp_path / "local", **sweep)
    workers = {n.node_id for n in nodes.worker_nodes}
    cfg = quickstart("compute.backend=ray", f"compute.ray_address={nodes.address}", "compute.ray_max_retries=1")
    on_ray, tried, killed = sweep_with_a_node_killed(nodes, tmp_path, monkeypatch, cfg, sweep)

    assert len(killed) == 1 and isinstance(killed[0], dict), killed
    victim, (survivor,) = killed[0], workers - {killed[0]["node"]}
    assert {n.node_id for n in nodes.worker_nodes} == {survivor}  # the node is gone from the cluster
    arms = {a["arm"] for a in tried}
    assert arms == {"no_memory", "repo:checkpoint-10", "repo:checkpoint-20"}
    for arm in arms:  # the killed arm ran twice, on the lost node then on the other; no other arm ran again
        nodes_of_arm = [a["node"] for a in tried if a["arm"] == arm]
        assert nodes_of_arm == ([victim["node"], survivor] if arm == victim["arm"] else [survivor])
    assert {a["node"] for a in tried} == workers  # tasks ran on both worker nodes, none on the head
    assert rows(tmp_path / "ray") == rows(tmp_path / "local") and len(rows(tmp_path / "local")) == 3 * 3 * 2
    assert on_ray["sweep"]["rows"] == local["sweep"]["rows"]
    assert on_ray["config_hash"] == local["config_hash"]


def test_a_node_lost_more_often_than_the_retries_allow_is_one_line(monkeypatch):
    """Ray raises NodeDiedError for a task whose node died once more than max_retries allows: the
    driver's one-line error of a lost worker, naming it and the resume, not a traceback."""
    ray = pytest.importorskip("ray", reason="needs the [ray] extra")
    from skillos.errors import SkillosError
    from skillos.evals.distributed import _result

    class Lost:
        def get(self, ref):
            raise ray.exceptions.NodeDiedError("Task failed due to the node (where this task was running) "
                                               "was dead or unavailable.")

    with pytest.raises(SkillosError, match=r"^arm no_memory: its Ray worker was lost 1 time\(s\) \(compute."
                                           r"ray_max_retries 0\): NodeDiedError; what finished is written: rerun"):
        _result(Lost(), object(), "arm no_memory", 0, ": rerun with --resume --out OUT")
