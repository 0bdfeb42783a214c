"""The Ray launcher on REAL processes, as far as the CPU build goes: every node joins, then vLLM refuses.

Three local nodes: ``ray start --head``, then each worker ``ray start --address`` once Ray lists
the nodes before it, then ``vllm serve --distributed-executor-backend ray`` on the head. The CPU
build of vLLM refuses the Ray executor; byog must surface that refusal as one sentence naming the
node, and leave nothing behind: no Ray daemon (they leave the process groups of `ray start`),
no vLLM process. The real Ray serve path runs on GPUs (benchmarks/gpu/multinode.sh).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import psutil
import pytest

from byog.core.errors import ByogError
from byog.images.models import prepare_model
from byog.runtimes.cluster import ClusterServer, cluster_spec, node_runtime_for
from byog.runtimes.nodes import marked_processes
from byog.schemas.plan import BUILTIN_MODEL, ModelSpec, server_config

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

REPO = Path(__file__).resolve().parents[2]


def test_ray_cluster_joins_then_the_cpu_build_refusal_is_one_sentence_and_nothing_is_left(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="the Ray launcher needs ray (pip install 'byog[ray]')")
    model = prepare_model(ModelSpec(path=BUILTIN_MODEL, max_model_len=1024))
    config = server_config(
        nodes=3,
        launcher="ray",
        tensor_parallel_size=3,
        args=["--enforce-eager"],
        ray_args=["--num-cpus", "1", "--object-store-memory", "80000000"],
        env={"VLLM_CPU_KVCACHE_SPACE": "1", "PYTHONPATH": str(REPO)},
        startup_timeout_s=600,
    )
    runtime, addresses = node_runtime_for(cluster_spec(config), config, model, "ray3", tmp_path)
    server = ClusterServer(
        "ray3", config, model, tmp_path / "servers" / "ray3", cluster_spec(config), runtime, addresses
    )
    daemons_before = {p.pid for p in psutil.process_iter(["name"]) if p.info["name"] in ("raylet", "gcs_server")}
    with pytest.raises(ByogError) as err:
        server.start()
    message = str(err.value)
    first_line = message.splitlines()[0]
    # The serve step ran, so Ray had listed all three nodes; its refusal is the sentence.
    assert first_line.startswith("server 'ray3': node 0 (serve) exited"), message[-3000:]
    assert "before the server became healthy" in first_line
    assert re.search(r"healthy: [\w.]*(Error|Exception): ", first_line), first_line
    print(f"\nthe refusal, as byog says it: {first_line}")
    logs = sorted(p.name for p in (tmp_path / "servers" / "ray3").glob("*.log"))
    assert logs == ["node0-ray-head.log", "node1-ray-worker.log", "node2-ray-worker.log", "server.log"]
    # Nothing left: no process carrying any node's marker, no new Ray daemon.
    assert server.nodes == [] and server.running == []
    markers = [f"ray3-node{rank}-" for rank in range(3)]
    leftovers = [p for p in psutil.process_iter(["pid"]) if _environ_has_prefix(p.pid, markers)]
    assert leftovers == []
    daemons_after = {p.pid for p in psutil.process_iter(["name"]) if p.info["name"] in ("raylet", "gcs_server")}
    assert daemons_after - daemons_before == set()
    assert marked_processes("ray3-node0") == []


def _environ_has_prefix(pid: int, prefixes: list[str]) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            entries = handle.read().split(b"\0")
    except OSError:
        return False
    return any(e.startswith(f"BYOG_NODE={p}".encode()) for e in entries for p in prefixes) and pid != os.getpid()
