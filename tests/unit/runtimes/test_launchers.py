"""What each node of a multi-node server runs, per launcher: the steps byog starts and records."""

from __future__ import annotations

import pytest

from byog.core.errors import UsageError
from byog.runtimes.launchers import check_split, gpu_ids, native_plan, ray_live_nodes, ray_plan
from byog.runtimes.ssh_nodes import ssh_address
from byog.schemas.plan import server_config
from byog.schemas.server import PreparedModel

MODEL = PreparedModel(path="/models/m", served_name="m", tokenizer="/models/m", max_model_len=1024)
PY = "/opt/py/bin/python"


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_native_three_nodes_rank0_serves_the_rest_are_headless() -> None:
    config = server_config(tensor_parallel_size=3, args=["--enforce-eager"])
    plan = native_plan(config, MODEL, ["10.0.0.1", "10.0.0.2", "10.0.0.3"], python=PY, api_port=8123, master_port=29511)
    assert [(s.rank, s.role, s.phase) for s in plan.steps] == [(0, "serve", 0), (1, "headless", 0), (2, "headless", 0)]
    for step in plan.steps:
        argv = step.argv
        assert argv[:5] == [PY, "-m", "byog.images.vllm_entry", "serve", "/models/m"]
        assert flag(argv, "--tensor-parallel-size") == "3" and flag(argv, "--nnodes") == "3"
        assert flag(argv, "--node-rank") == str(step.rank) and flag(argv, "--distributed-executor-backend") == "mp"
        assert flag(argv, "--master-addr") == "10.0.0.1" and flag(argv, "--master-port") == "29511"
        assert ("--headless" in argv) == (step.rank > 0)
        assert step.env["VLLM_HOST_IP"] == plan.addresses[step.rank]
        assert "--enforce-eager" in argv
    assert plan.steps[0].env["VLLM_SERVER_DEV_MODE"] == "1"  # /server_info: the TP size read back
    assert plan.base_url == "http://10.0.0.1:8123"
    assert plan.describe()[1].startswith("node 1 @ 10.0.0.2 [headless]: VLLM_HOST_IP=10.0.0.2 /opt/py/bin/python -m")


def test_ray_head_workers_then_serve_on_the_head_after_every_node_joined() -> None:
    config = server_config(tensor_parallel_size=2)
    plan = ray_plan(
        config,
        MODEL,
        ["h0", "h1"],
        python=PY,
        api_port=8000,
        ray_port=6390,
        gpus_per_node=1,
        ray_args=["--object-store-memory", "100000000"],
    )
    head, worker, serve = plan.steps
    assert (head.role, head.phase, worker.role, worker.phase, serve.role, serve.phase) == (
        "ray-head",
        0,
        "ray-worker",
        1,
        "serve",
        2,
    )
    assert head.argv[:5] == [PY, "-m", "ray.scripts.scripts", "start", "--block"]
    assert flag(head.argv, "--port") == "6390" and "--head" in head.argv and flag(head.argv, "--num-gpus") == "1"
    assert flag(worker.argv, "--address") == "h0:6390" and flag(worker.argv, "--node-ip-address") == "h1"
    assert flag(worker.argv, "--object-store-memory") == "100000000"
    assert serve.rank == 0 and flag(serve.argv, "--distributed-executor-backend") == "ray"
    assert "--nnodes" not in serve.argv and serve.env["RAY_ADDRESS"] == "h0:6390"
    assert all(s.env["RAY_USAGE_STATS_ENABLED"] == "0" for s in plan.steps)
    assert "(once Ray lists 1 node)" in plan.describe()[1] and "(once Ray lists 2 nodes)" in plan.describe()[2]


def test_sizes_must_fill_the_nodes_and_byog_owns_the_launch_flags() -> None:
    check_split(server_config(tensor_parallel_size=3), 3, 0, "s")
    check_split(server_config(tensor_parallel_size=2, args=["--pipeline-parallel-size", "2"]), 2, 2, "s")
    with pytest.raises(UsageError, match="do not split evenly over 2 nodes"):
        check_split(server_config(tensor_parallel_size=3), 2, 0, "s")
    with pytest.raises(UsageError, match="2 nodes x 4 GPUs = 8"):
        check_split(server_config(tensor_parallel_size=4), 2, 4, "s")
    with pytest.raises(UsageError, match="byog sets --nnodes"):
        check_split(server_config(tensor_parallel_size=2, args=["--nnodes", "2"]), 2, 0, "s")
    with pytest.raises(UsageError, match="byog sets --headless"):
        check_split(server_config(tensor_parallel_size=2, args=["--headless"]), 2, 0, "s")
    with pytest.raises(UsageError, match="nodes >= 2"):
        check_split(server_config(), 1, 0, "s")


def test_nodes_sharing_a_host_get_disjoint_gpus() -> None:
    assert gpu_ids(["a", "a"], 1) == [[0], [1]]
    assert gpu_ids(["a", "b", "a", "b"], 2) == [[0, 1], [0, 1], [2, 3], [2, 3]]
    assert gpu_ids(["a", "a", "a"], 0) == [[], [], []]


RAY_STATUS = """======== Autoscaler status: 2026-11-30 07:50:01.123456 ========
Node status
---------------------------------------------------------------
Active:
 1 node_7c1f0b5e4c9a
 1 node_91d2aa0b3e1f
Pending:
 (no pending nodes)
Recent failures:
 (no failures)

Resources
---------------------------------------------------------------
Usage:
 0.0/4.0 CPU
"""


def test_ray_status_counts_active_nodes_only() -> None:
    assert ray_live_nodes(RAY_STATUS) == 2
    assert ray_live_nodes(RAY_STATUS.replace(" 1 node_91d2aa0b3e1f\n", "")) == 1
    assert ray_live_nodes("ConnectionError: could not connect") == 0


@pytest.mark.parametrize(
    "destination,address",
    [
        ("tray0", "tray0"),
        ("ubuntu@tray1", "tray1"),
        ("ssh://ubuntu@tray2:2222", "tray2"),
        ("ssh://root@127.0.0.1:22422", "127.0.0.1"),
        ("ssh://[::1]:22", "::1"),
    ],
)
def test_ssh_destination_to_node_address(destination: str, address: str) -> None:
    assert ssh_address(destination) == address
