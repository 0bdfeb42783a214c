"""The CPU default as a 3-node TP3 server on a REAL Slurm cluster: one srun step per node.

The session's Slurm cluster (tests/support/slurm.py: slurmctld + slurmd n1..n3 on this host) gives
byog an allocation (``salloc --no-shell``); byog runs "inside" it as a batch script would
(SLURM_JOB_ID, SLURM_JOB_NODELIST). First the refusals, each before anything starts and leaving
no step: outside an allocation, too few nodes, too few GPUs, a node of another architecture.
Then one cluster start (module-scoped) shared by: server.json's job id, step ids, node names and
srun argv; a bench point (an eval sees only the endpoint: test_cluster_cpu runs one on local
nodes, and the Slurm smoke job runs GSM8K under sbatch); node 2's step cancelled mid-point
(``scancel J.S``), failing the point, tearing the group down and restarting it once, a rerun measuring the point;
then, the restarted cluster idle, node 1's vLLM process SIGKILLed: seen dead, its steps ended, the
group torn down (no second restart: that part is the sweep's and the scancel measured it);
afterwards squeue lists no step of byog's and no vLLM process is left. ``squeue`` and the vLLM
processes are printed before, during and after each kill (run with -s to see them).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from byog.bench.sweep import run_bench_for_server
from byog.core.errors import EnvironmentProblem, UsageError
from byog.core.paths import RunDir
from byog.core.reporter import NullReporter
from byog.images.models import prepare_model
from byog.pipeline.runtimes import runtime_for
from byog.plans.expand import points_for_server
from byog.runtimes.cluster import ClusterServer
from byog.runtimes.nodes import marked_processes
from byog.runtimes.slurm_nodes import SlurmProc
from byog.schemas.plan import BUILTIN_MODEL, BatchWorkload, ModelSpec, Plan, ServerConfig, server_config

pytestmark = [pytest.mark.integration, pytest.mark.cluster, pytest.mark.slurm]

NODES = 3
MAX_MODEL_LEN = 2048  # as test_cluster_cpu's clusters
REPO = Path(__file__).resolve().parents[2]
QUIET = NullReporter()
ENV_KEYS = ("SLURM_CONF", "SLURM_JOB_ID", "SLURM_JOB_NODELIST")


def slurm_server(**extra: object) -> ServerConfig:
    env = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    fields: dict = {
        "runtime": "slurm",
        "nodes": NODES,
        "tensor_parallel_size": NODES,
        "args": ["--enforce-eager"],
        "env": env,
        "startup_timeout_s": 900,
        **extra,
    }
    return server_config(**fields)


def plan_for(config: ServerConfig, osl: int) -> Plan:
    return Plan(
        name="cluster-slurm",
        model=ModelSpec(path=BUILTIN_MODEL, max_model_len=MAX_MODEL_LEN),
        servers={"tp3": config},
        baseline="tp3",
        workloads=[BatchWorkload(name=f"osl{osl}", batch_sizes=[1], isl=[32], osl=[osl], warmup_waves=0, waves=1)],
        remeasure=0,  # re-measuring a flagged point is tests/unit/bench/test_sweep.py's, not this test's
    )


@contextmanager
def inside(env: dict[str, str]) -> Iterator[None]:
    """This process as a batch script of the job sees itself (what byog reads), restored after."""
    saved = {k: os.environ.get(k) for k in ENV_KEYS}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _in_a_slurm_step(pid: int) -> bool:
    """Whether the process runs in a Slurm step (srun gives its tasks, and so their children, SLURM_STEP_ID):
    a vLLM server started outside Slurm (a module CI runs beside this one) is never this module's."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return any(entry.startswith(b"SLURM_STEP_ID=") for entry in handle.read().split(b"\0"))
    except OSError:
        return False


def _all_vllm_processes() -> list[tuple[int, str]]:
    out = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmd = proc.info["cmdline"] or []
        if cmd[:1] == ["srun"]:
            continue
        vllm = "byog.images.vllm_entry" in cmd or any("VLLM" in part and "Worker" in part for part in cmd[:1])
        if vllm and _in_a_slurm_step(proc.pid):
            out.append((proc.pid, " ".join(cmd)[:140]))
    return out


# vLLM processes in Slurm steps this module did not start (an earlier module's, still exiting): never
# counted as left over
FOREIGN: set[int] = set()


@pytest.fixture(scope="module", autouse=True)
def _foreign_processes() -> None:
    FOREIGN.update(pid for pid, _ in _all_vllm_processes())
    if FOREIGN:
        print("\n[slurm] vLLM processes running before this module (not counted):", *sorted(FOREIGN))


def vllm_processes() -> list[tuple[int, str]]:
    """vLLM's processes on this host (API servers, headless ranks, their workers) that this module's
    steps started, not the srun clients: a process leaked by a step is new, so it still counts."""
    return [(pid, cmd) for pid, cmd in _all_vllm_processes() if pid not in FOREIGN]


def show(cluster, label: str) -> None:
    print(f"\n[slurm] {label}: squeue --steps:", *(cluster.squeue_steps() or ["(none)"]), sep="\n    ")
    print(
        f"[slurm] {label}: vLLM processes:", *(f"{p} {c}" for p, c in vllm_processes() or [(0, "(none)")]), sep="\n    "
    )


def launch(config: ServerConfig, root: Path) -> ClusterServer:
    model = prepare_model(ModelSpec(path=BUILTIN_MODEL, max_model_len=MAX_MODEL_LEN))
    return runtime_for(config).launch("tp3", config, model, RunDir(root).server_dir("tp3"))  # type: ignore[return-value]


def assert_nothing_left(cluster) -> None:
    assert cluster.squeue_steps() == []
    assert vllm_processes() == []


# --- refusals: one sentence, exit 2 or 3, nothing started ------------------------------------------


def test_outside_an_allocation_is_refused(slurm_cluster, tmp_path) -> None:
    with inside({"SLURM_CONF": str(slurm_cluster.conf)}):
        os.environ.pop("SLURM_JOB_ID", None)
        with pytest.raises(UsageError, match="runs inside a Slurm allocation and SLURM_JOB_ID is unset") as err:
            launch(slurm_server(), tmp_path / "runs" / "r")
    assert err.value.exit_code == 2 and "\n" not in str(err.value)
    assert_nothing_left(slurm_cluster)


def test_too_few_nodes_is_refused(slurm_cluster, tmp_path) -> None:
    job = slurm_cluster.allocate(2)
    try:
        with (
            inside(slurm_cluster.job_env(job)),
            pytest.raises(EnvironmentProblem, match=f"needs 3 nodes but Slurm job {job} holds 2") as err,
        ):
            launch(slurm_server(), tmp_path / "runs" / "r")
        assert err.value.exit_code == 3
        assert_nothing_left(slurm_cluster)
    finally:
        slurm_cluster.cancel(job)


def test_too_few_gpus_and_another_architecture_are_refused(slurm_cluster, tmp_path) -> None:
    job = slurm_cluster.allocate(3)
    try:
        with inside(slurm_cluster.job_env(job)):
            with pytest.raises(EnvironmentProblem, match="needs 1 GPUs per node but Slurm job .* holds fewer") as gpus:
                launch(slurm_server(gpus_per_node=1), tmp_path / "runs" / "g")
            t0 = time.monotonic()
            with pytest.raises(EnvironmentProblem, match="Slurm node n1 is amd64 but the image is linux/arm64") as arch:
                launch(slurm_server(platform="linux/arm64"), tmp_path / "runs" / "a")
            print(f"\n[slurm] another architecture refused after {time.monotonic() - t0:.1f} s: {arch.value}")
        assert gpus.value.exit_code == 3 and arch.value.exit_code == 3
        assert "\n" not in str(arch.value)
        assert_nothing_left(slurm_cluster)
    finally:
        slurm_cluster.cancel(job)


# --- one TP3 cluster of srun steps -----------------------------------------------------------------


@pytest.fixture(scope="module")
def tp3(slurm_cluster, tmp_path_factory) -> Iterator[ClusterServer]:
    job = slurm_cluster.allocate(NODES)
    env = slurm_cluster.job_env(job)
    run_root = tmp_path_factory.mktemp("cluster-slurm") / "runs" / f"cluster-slurm-{os.getpid()}"
    with inside(env):
        started = time.monotonic()
        server = launch(slurm_server(), run_root)
        print(f"\n[slurm] 3-node TP3 over srun steps of job {job} healthy after {time.monotonic() - started:.1f} s")
        _serve_one_request(server)
        # the leftover checks below can fail: a serving server's processes are found (in their steps)
        assert len(vllm_processes()) >= 3, vllm_processes()
        server.test_run_root = run_root  # type: ignore[attr-defined]
        server.test_job = job  # type: ignore[attr-defined]
        try:
            yield server
        finally:
            server.stop()
            show(slurm_cluster, "after stop")
            try:
                assert [s for s in slurm_cluster.squeue_steps() if "tp3-node" in s] == []
                assert vllm_processes() == []
            finally:
                slurm_cluster.cancel(job)


def _serve_one_request(server: ClusterServer) -> None:
    """byog restarts a server that dies mid-point only if it has served since it started (else it cannot
    serve); one answered request makes every test here hold alone, not only after test_a_bench_point."""
    body = json.dumps({"model": server.endpoint.model, "prompt": "Hello", "max_tokens": 1}).encode()
    request = urllib.request.Request(
        f"{server.endpoint.base_url}/v1/completions", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as answer:
        assert json.loads(answer.read())["choices"], "the TP3 server answered no completion"


def test_server_json_records_the_job_its_steps_and_nodes(tp3: ClusterServer, slurm_cluster) -> None:
    record = json.loads(tp3.record_path.read_text())
    job = tp3.test_job  # type: ignore[attr-defined]
    assert record["runtime"] == "slurm" and record["launcher"] == "native"
    listed = slurm_cluster.squeue_steps()
    for rank, node in enumerate(record["nodes"]):
        assert node["job_id"] == job and node["slurm_node"] == f"n{rank + 1}"
        (step,) = node["slurm_steps"]
        argv = step["srun_argv"]
        assert argv[:6] == ["srun", f"--jobid={job}", "--nodes=1", "--ntasks=1", f"--nodelist=n{rank + 1}", "--overlap"]
        assert "--kill-on-bad-exit=1" in argv and any(a.startswith("--export=ALL,") for a in argv)
        assert step["step_id"].startswith(f"{job}.") and any(s.startswith(step["step_id"] + " ") for s in listed)
        assert node["fingerprint"]["arch"] == "amd64" and node["fingerprint"]["packages"]["vllm-cpu"].startswith("0.32")
    assert record["resolved"]["server_info"]["vllm_config"]["parallel_config"]["tensor_parallel_size"] == 3
    assert len({n["slurm_steps"][0]["step_id"] for n in record["nodes"]}) == 3


def test_a_bench_point(tp3: ClusterServer) -> None:
    rd = RunDir(tp3.test_run_root)  # type: ignore[attr-defined]
    plan = plan_for(tp3.config, osl=16)
    t0 = time.monotonic()
    result = run_bench_for_server(plan, "tp3", tp3, rd, QUIET)
    assert result["run"] and not result["failed"] and result["restarts"] == 0, result
    assert json.loads(rd.bench_point("tp3", result["run"][0]).read_text())["status"] == "complete"
    print(f"\n[slurm] bench point in {time.monotonic() - t0:.1f} s")


def _step_of(server: ClusterServer, rank: int) -> SlurmProc:
    proc = next(r.proc for r in server.running if r.step.rank == rank)
    assert isinstance(proc, SlurmProc)
    return proc


def _vllm_task_of(server: ClusterServer, rank: int) -> psutil.Process:
    """Node ``rank``'s vLLM process: the step's task, found by the marker (srun carries it too)."""
    marker = server.nodes[rank].marker
    for proc in marked_processes(marker):
        try:
            cmd = proc.cmdline()
            if cmd[:1] != ["srun"] and "byog.images.vllm_entry" in cmd:
                return proc
        except psutil.Error:
            continue
    raise AssertionError(f"no vLLM task of node {rank} found")


def _cancel_mid_point(tp3: ClusterServer, slurm_cluster, rank: int, point_osl: int) -> None:
    rd = RunDir(tp3.test_run_root)  # type: ignore[attr-defined]
    plan = plan_for(tp3.config, osl=point_osl)
    point_id = points_for_server(plan, "tp3")[0].point_id
    before = rd.metrics_snapshot("tp3", point_id, "before")
    old_steps = [_step_of(tp3, r).step_id() for r in range(NODES)]
    show(slurm_cluster, "before the scancel")

    def killer() -> None:
        deadline = time.monotonic() + 300
        while not before.is_file() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # requests in flight
        slurm_cluster.run("scancel", old_steps[rank])
        time.sleep(0.3)
        show(slurm_cluster, f"during the scancel (node {rank}), 0.3 s after")
        time.sleep(2.7)
        show(slurm_cluster, f"during the scancel (node {rank}), 3 s after")

    t0 = time.monotonic()
    thread = threading.Thread(target=killer)
    thread.start()
    result = run_bench_for_server(plan, "tp3", tp3, rd, QUIET)
    thread.join()
    assert result["failed"] == [point_id] and result["restarts"] == 1 and not result["aborted"], result
    record = json.loads(rd.bench_point("tp3", point_id).read_text())
    role = "headless" if rank else "serve"
    assert record["status"] == "failed" and f"node {rank} ({role}) exited" in record["log_tail"]
    assert "the group was torn down" in record["log_tail"]
    listed = slurm_cluster.squeue_steps()
    assert not any(s.split()[0] in old_steps for s in listed), listed  # the old steps are gone
    assert tp3.alive() and [_step_of(tp3, r).step_id() for r in range(NODES)] != old_steps
    show(slurm_cluster, "after the scancel: restarted")
    again = run_bench_for_server(plan, "tp3", tp3, rd, QUIET)
    assert again["run"] == [point_id] and not again["failed"], again
    assert rd.bench_point_complete("tp3", point_id)
    print(
        f"[slurm] scancel of node {rank}: failed, torn down, restarted, rerun measured in {time.monotonic() - t0:.1f} s"
    )


def test_a_step_cancelled_mid_point_fails_it_and_a_rerun_resumes(tp3: ClusterServer, slurm_cluster) -> None:
    _cancel_mid_point(tp3, slurm_cluster, rank=2, point_osl=32)
    record = json.loads(tp3.record_path.read_text())
    assert len(record["starts"]) == 2 and record["failures"][0]["rank"] == 2


def test_a_vllm_process_killed_is_seen_dead_and_its_steps_end(tp3: ClusterServer, slurm_cluster) -> None:
    """kill -9 of node 1's vLLM task, the cluster idle: its step ends, byog sees the node dead, records
    it and tears the group down. What a death mid-point adds (the point failed with the node's tail,
    the restart, the rerun) is the sweep's, the same for any death: the scancel test above measures it."""
    old_steps = [_step_of(tp3, r).step_id() for r in range(NODES)]
    markers = [n.marker for n in tp3.nodes]
    os.kill(_vllm_task_of(tp3, 1).pid, signal.SIGKILL)
    assert wait_until_dead(tp3, timeout_s=120), "the killed node was never seen dead"
    show(slurm_cluster, "after the kill -9 of node 1's vLLM (idle)")
    assert tp3.failure is not None and "node 1 (headless) exited" in tp3.failure
    assert "the group was torn down" in tp3.failure
    listed = slurm_cluster.squeue_steps()
    assert not any(s.split()[0] in old_steps for s in listed), listed
    assert [p.pid for m in markers for p in marked_processes(m)] == []
    record = json.loads(tp3.record_path.read_text())
    assert len(record["starts"]) == 2 and record["failures"][-1]["rank"] == 1


def wait_until_dead(server: ClusterServer, timeout_s: float) -> bool:
    """Whether ``server`` saw one of its nodes die within ``timeout_s`` (``alive`` notes the death)."""
    deadline = time.monotonic() + timeout_s
    while server.alive():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True
