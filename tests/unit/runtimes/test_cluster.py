"""A node that dies between two looks of the cluster's watchdog: the sweep reads the same failure.

The sweep learns that a point failed from its requests, then asks the cluster ``alive()`` and its
``log_tail()``; the watchdog looks every 0.5 s. Whoever sees the dead node first must record it and
tear the group down, once: CI caught the sweep reading a plain tail (no "torn down") and restarting
a group whose watchdog then never recorded the failure. Real processes stand in for vLLM's nodes
(the race is in byog, not in vLLM); tests/integration/test_cluster_cpu.py kills a real vLLM node.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

from byog.runtimes.cluster import ClusterServer, ClusterSpec, Running
from byog.runtimes.nodes import LocalNode, LocalNodes
from byog.runtimes.ssh_nodes import SshNodes
from byog.schemas.plan import server_config
from byog.schemas.server import PreparedModel


def _cluster_of_sleepers(tmp_path: Path) -> ClusterServer:
    config = server_config(runtime="local", nodes=3, launcher="native", tensor_parallel_size=3)
    model = PreparedModel(path="/models/m", served_name="m", tokenizer="/models/m", max_model_len=1024)
    cluster = ClusterServer(
        "tp3", config, model, tmp_path, ClusterSpec(nodes=3, gpus_per_node=0), LocalNodes(), ["127.0.0.1"] * 3
    )
    for rank in range(3):
        node = LocalNode(rank, "127.0.0.1", [], f"byog-test-{os.getpid()}-{rank}")
        cluster.nodes.append(node)
        for step in cluster.plan.steps_of(rank):
            log = tmp_path / f"node{rank}.log"
            log.write_text(f"node {rank} says goodbye\n")
            proc = node.spawn(step.role, [sys.executable, "-c", "import time; time.sleep(600)"], {}, log)
            cluster.running.append(Running(step, proc, log))
    return cluster


def test_the_sweep_sees_a_node_death_the_watchdog_has_not_seen_yet(tmp_path: Path) -> None:
    cluster = _cluster_of_sleepers(tmp_path)
    cluster._watcher = threading.Thread(target=lambda: None)  # watching, but it has not looked yet
    victim = next(r for r in cluster.running if r.step.rank == 2)
    others = [r.proc for r in cluster.running if r is not victim]
    try:
        os.killpg(victim.proc.popen.pid, signal.SIGKILL)  # type: ignore[attr-defined]
        deadline = time.monotonic() + 10
        while victim.proc.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not cluster.alive()
        tail = cluster.log_tail()
        assert (
            "node 2 (headless) exited" in tail and "the group was torn down" in tail and "node 2 says goodbye" in tail
        )
        assert [f["rank"] for f in cluster.failures] == [2]  # recorded once, though asked twice
        assert cluster.running == [] and not any(p.alive() for p in others)  # the group is down
    finally:
        cluster._watcher = None
        cluster.stop()


def test_a_death_that_reaches_byog_after_the_sweeps_look_is_named_within_the_runtimes_lag(tmp_path: Path) -> None:
    """Over ssh a killed node's end reaches byog only once sshd closes the channel and the ssh client
    exits, and the API server's requests can fail first: CI caught a point failed with the API
    server's gloo error, then a restart that never recorded the dead node."""
    cluster = _cluster_of_sleepers(tmp_path)
    cluster.runtime = SshNodes()  # only its death_lag_s is read here: the nodes stay local processes
    cluster._watcher = threading.Thread(target=lambda: None)
    victim = next(r for r in cluster.running if r.step.rank == 2)
    late = threading.Timer(0.5, os.killpg, (victim.proc.popen.pid, signal.SIGKILL))  # type: ignore[attr-defined]
    try:
        late.start()
        tail = cluster.log_tail()  # asked before the node is gone
        assert "node 2 (headless) exited" in tail and "the group was torn down" in tail
        assert [f["rank"] for f in cluster.failures] == [2]
    finally:
        late.join()
        cluster._watcher = None
        cluster.stop()
