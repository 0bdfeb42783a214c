"""The CPU default as a 3-node TP3 server (vLLM's native launcher) on REAL processes and containers.

One cluster start per node runtime (module-scoped, parametrized): three containers on the real
Docker engine (the ``cpu-host`` image, host network), three processes over SSH to this machine's
own sshd on 127.0.0.1. Against each: server.json records every node, the TP size is read back from
the server, a bench point runs; an eval (2 items of byog's generated arithmetic) runs on the ssh
nodes. Last, on every kind, a node killed while the cluster is idle is seen dead and the group torn
down (the node runtime's part). After each runtime's module part, nothing is left: no process
carrying a node marker, no container of the run. A node dying mid-point (the point failed with the
node's log tail, the group restarted by the sweep, a rerun resuming the point) is the sweep's doing,
the same on every node runtime: test_cluster_slurm_cpu measures it on a cluster (a step cancelled
mid-point), test_bench_kill on a single server.

Budget on 2 cores: a start is ~60 s (three ranks share two cores), a token ~1 s at TP3, so the
points are tiny (B=1, ISL 32, OSL 16).
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from byog.bench.sweep import run_bench_for_server
from byog.core.errors import EnvironmentProblem
from byog.core.paths import RunDir
from byog.core.reporter import NullReporter
from byog.evals.runner import run_evals_for_server
from byog.images.models import prepare_model
from byog.pipeline.runtimes import runtime_for
from byog.runtimes.cluster import ClusterServer
from byog.runtimes.nodes import marked_processes
from byog.runtimes.ssh_nodes import SshProc
from byog.schemas.plan import BUILTIN_MODEL, BatchWorkload, EvalSpec, ModelSpec, Plan, ServerConfig, server_config
from tests.support.sshd import sshd_available, start_loopback_sshd

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

NODES = 3
MAX_MODEL_LEN = 2048  # as test_cluster_slurm_cpu's clusters
REPO = Path(__file__).resolve().parents[2]
QUIET = NullReporter()


def cluster_server(kind: str, image: str | None = None, **extra: object) -> ServerConfig:
    """The plan's server: 3 nodes, TP3, the native launcher, on ``kind`` nodes."""
    env = {
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "PYTHONPATH": str(REPO),
    }  # ssh nodes start with sshd's environment: byog's source must be importable
    return server_config(
        runtime=kind,
        **({"image": image} if image else {}),
        nodes=NODES,
        launcher="native",
        tensor_parallel_size=NODES,
        args=["--enforce-eager"],
        env=env,
        startup_timeout_s=900,
        **extra,
    )


def plan_for(config: ServerConfig, workload: str, osl: int, evals: list[EvalSpec] | None = None) -> Plan:
    return Plan(
        name="cluster-cpu",
        model=ModelSpec(path=BUILTIN_MODEL, max_model_len=MAX_MODEL_LEN),
        servers={"tp3": config},
        baseline="tp3",
        evals=evals or [],
        workloads=[BatchWorkload(name=workload, batch_sizes=[1], isl=[32], osl=[osl], warmup_waves=0, waves=1)],
        remeasure=0,  # re-measuring a flagged point is tests/unit/bench/test_sweep.py's, not this test's
    )


def _docker_image() -> str:
    from byog.images.engine import docker_client
    from tests.support.images import cpu_host_image

    return cpu_host_image(docker_client())


# docker: skipped by the fixture where no engine answers (a failure with BYOG_REQUIRE_DOCKER=1).
# Local nodes (process groups on this machine) are not a kind here: test_nodes_teardown holds them to
# the node runtime's contract on real processes and test_cluster_ray_cpu starts a three-node Ray
# cluster on them; the native launcher they would run is the ssh kind's, so a third TP3 start
# (about 90 s on CI's two cores) would add time, not coverage.
CLUSTER_KINDS = ["ssh", pytest.param("docker", marks=pytest.mark.docker)]


@pytest.fixture(scope="module", params=CLUSTER_KINDS)
def cluster(request, tmp_path_factory) -> Iterator[ClusterServer]:
    kind = request.param
    extra: dict = {}
    image = None
    sshd_gen = None
    if kind == "docker":
        try:
            image = _docker_image()
        except EnvironmentProblem as err:
            if os.environ.get("BYOG_REQUIRE_DOCKER") == "1":
                pytest.fail(str(err))
            pytest.skip(str(err))
    if kind == "ssh":
        why = sshd_available()
        if why:
            if os.environ.get("BYOG_REQUIRE_SSH") == "1":
                pytest.fail(why)
            pytest.skip(why)
        sshd_gen = start_loopback_sshd(tmp_path_factory.mktemp("sshd"))
        sshd = next(sshd_gen)
        extra = {"hosts": [sshd.destination] * NODES, "ssh_options": list(sshd.options), "gpus_per_node": 0}
    model = prepare_model(ModelSpec(path=BUILTIN_MODEL, max_model_len=MAX_MODEL_LEN))
    run_root = tmp_path_factory.mktemp(f"cluster-{kind}") / "runs" / f"cluster-{kind}-{os.getpid()}"
    config = cluster_server(kind, image, **extra)
    started = time.monotonic()
    server = runtime_for(config).launch("tp3", config, model, RunDir(run_root).server_dir("tp3"))
    assert isinstance(server, ClusterServer)
    print(f"\n[{kind}] 3-node TP3 healthy after {time.monotonic() - started:.1f} s")
    server.test_kind = kind  # type: ignore[attr-defined]
    server.test_run_root = run_root  # type: ignore[attr-defined]
    markers = [n.marker for n in server.nodes]
    # Teardown evidence (printed with -s): what runs while the cluster is up.
    up = [(p.pid, " ".join(_cmdline(p))[:100]) for m in markers for p in marked_processes(m)]
    print(f"[{kind}] up: {len(up)} processes carry a node marker:", *up, sep="\n  ")
    try:
        yield server
    finally:
        server.stop()
        left = [p.pid for m in markers for p in marked_processes(m)]
        assert left == [], f"processes left after stop: {left}"
        if kind == "docker":
            from byog.images.engine import docker_client
            from tests.support.containers import wait_until_gone

            assert wait_until_gone(docker_client(), f"byog.run={run_root.name}", timeout_s=30) == []
        if sshd_gen is not None:
            sshd_gen.close()


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except psutil.Error:
        return ["(exited)"]


def test_every_node_is_recorded_and_the_tp_size_read_back(cluster: ClusterServer) -> None:
    record = json.loads(cluster.record_path.read_text())
    assert record["runtime"] == cluster.test_kind and record["launcher"] == "native"  # type: ignore[attr-defined]
    assert [n["rank"] for n in record["nodes"]] == [0, 1, 2]
    for node in record["nodes"]:
        (step,) = node["steps"]
        argv = step["argv"]
        assert argv[argv.index("--node-rank") + 1] == str(node["rank"])
        assert argv[argv.index("--nnodes") + 1] == "3" and argv[argv.index("--tensor-parallel-size") + 1] == "3"
        assert ("--headless" in argv) == (node["rank"] > 0)
        assert node["fingerprint"]["packages"]["vllm-cpu"].startswith("0.32")
        assert node["fingerprint"]["hostname"]
    assert (
        record["resolved"]["server_info"]["vllm_config"]["parallel_config"]["tensor_parallel_size"] == 3
    )  # the server's own word (/server_info)
    assert cluster.endpoint.tensor_parallel_size == 3
    assert record["version"]["version"].startswith("0.32")
    assert all(p.alive() for p in (r.proc for r in cluster.running))


def test_a_bench_point_and_an_eval(cluster: ClusterServer, shared_datasets: Path) -> None:
    """A point on every kind of node; the eval on ssh nodes (an eval sees only the endpoint, so on
    another node runtime it would add CI time, not coverage). The eval is byog's generated arithmetic
    through lm-eval's chat path: ~30 prompt tokens and a few answer tokens an item, where a GSM8K
    item is ~900 prompt tokens (5-shot) and up to 32 answer tokens through a TP3 gloo group on two
    cores; GSM8K itself runs on a single server (test_evals_cpu, the smoke run)."""
    rd = RunDir(cluster.test_run_root)  # type: ignore[attr-defined]
    with_eval = cluster.test_kind == "ssh"  # type: ignore[attr-defined]
    plan = plan_for(
        cluster.config,
        "point",
        osl=16,
        evals=[EvalSpec(task="arithmetic_generated", limit=2, num_concurrent=2)] if with_eval else None,
    )
    result = run_bench_for_server(plan, "tp3", cluster, rd, QUIET)
    assert result["run"] and not result["failed"] and result["restarts"] == 0, result
    point = json.loads(rd.bench_point("tp3", result["run"][0]).read_text())
    assert point["status"] == "complete"
    if with_eval:
        run_evals_for_server(plan, "tp3", cluster.endpoint, rd, shared_datasets, QUIET)
        results = json.loads(rd.eval_results("tp3", "arithmetic_generated").read_text())
        assert results["n_items"] == 2 and 0.0 <= results["score"] <= 100.0


def _kill_node(cluster: ClusterServer, rank: int) -> None:
    """SIGKILL a node from outside, as a crash or an OOM kill would."""
    victim = next(r for r in cluster.running if r.step.rank == rank)
    if isinstance(victim.proc, SshProc):
        os.killpg(victim.proc.pgid(), signal.SIGKILL)  # the node is this machine: its group, not the ssh client
    else:
        cluster.nodes[rank].container.kill()


def test_nothing_but_the_cluster_runs_vllm(cluster: ClusterServer) -> None:
    """Every vLLM process of this cluster carries a node marker (so teardown can find it)."""
    port = str(cluster.plan.api_port)
    markers = {n.marker for n in cluster.nodes}
    ours = {p.pid for m in markers for p in marked_processes(m)}
    serving = [
        p
        for p in psutil.process_iter(["pid", "cmdline"])
        if port in (p.info["cmdline"] or []) and "byog.images.vllm_entry" in (p.info["cmdline"] or [])
    ]
    assert serving and all(p.pid in ours for p in serving)


def test_a_killed_node_is_seen_dead_and_its_group_torn_down(cluster: ClusterServer) -> None:
    """Last, on every kind: node 2 SIGKILLed from outside while the cluster is idle; byog sees it
    dead, records it in server.json and tears the whole group down (nothing carries a marker)."""
    markers = [n.marker for n in cluster.nodes]
    failures_before = len(json.loads(cluster.record_path.read_text()).get("failures", []))
    _kill_node(cluster, 2)
    deadline = time.monotonic() + 120
    while cluster.alive():
        assert time.monotonic() < deadline, "the killed node was never seen dead"
        time.sleep(0.2)
    assert cluster.failure is not None and "node 2 (headless) exited" in cluster.failure
    assert "the group was torn down" in cluster.failure
    assert [p.pid for m in markers for p in marked_processes(m)] == []
    failures = json.loads(cluster.record_path.read_text())["failures"]
    assert len(failures) == failures_before + 1 and failures[-1]["rank"] == 2
