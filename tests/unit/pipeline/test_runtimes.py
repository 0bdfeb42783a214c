"""A server over several nodes in a plan: the fields, their refusals, and what `byog plan` shows per node."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from byog.analysis.server_log import root_cause
from byog.cli import app
from byog.pipeline.runtimes import runtime_for
from byog.runtimes.cluster import cluster_spec, describe_cluster, node_addresses
from byog.schemas.plan import server_config
from byog.schemas.server import PreparedModel

MODEL = PreparedModel(path="/models/m", served_name="m", tokenizer="/models/m", max_model_len=1024)
HOSTS = ["ubuntu@tray0", "ubuntu@tray1"]


@pytest.mark.parametrize(
    "fields,message",
    [
        ({"runtime": "ssh", "nodes": 2, "hosts": HOSTS[:1]}, "one 'hosts' entry per node"),
        ({"runtime": "ssh", "hosts": HOSTS[:1]}, "the 'ssh' runtime runs multi-node servers"),
        # a field the runtime does not take: refused naming the runtime and the field
        ({"runtime": "local", "nodes": 2, "hosts": HOSTS}, r"local\.hosts\s+Extra inputs are not permitted"),
        ({"runtime": "endpoint", "url": "http://x:1", "nodes": 2}, r"endpoint\.nodes\s+Extra inputs are not permitted"),
        ({"runtime": "docker", "image": "i", "nodes": 3, "hosts": HOSTS}, "3 nodes but 2 'hosts'"),
        ({"launcher": "ray"}, "for multi-node servers"),
        ({"nodes": 2, "launcher": "mpi"}, "launcher"),
    ],
)
def test_multi_node_fields_are_checked(fields: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        server_config(**fields)


def test_a_multi_node_server_goes_to_the_cluster_runtime() -> None:
    config = server_config(
        runtime="ssh",
        nodes=2,
        hosts=HOSTS,
        tensor_parallel_size=8,
        launcher="ray",
        ssh_options=["-i", "k"],
        python="/opt/py",
    )
    assert type(runtime_for(config)).__name__ == "ClusterRuntime"
    assert type(runtime_for(server_config())).__name__ == "LocalRuntime"
    spec = cluster_spec(config)
    assert (spec.nodes, spec.launcher, spec.node_runtime, spec.hosts, spec.python, spec.ssh_options) == (
        2,
        "ray",
        "ssh",
        tuple(HOSTS),
        "/opt/py",
        ("-i", "k"),
    )
    assert node_addresses(spec) == ["tray0", "tray1"]
    assert node_addresses(cluster_spec(server_config(nodes=3, tensor_parallel_size=3))) == ["127.0.0.1"] * 3


def test_describe_shows_every_node_for_both_launchers_plans_first() -> None:
    config = server_config(runtime="ssh", nodes=2, hosts=HOSTS, tensor_parallel_size=8, python="/opt/py")
    lines = describe_cluster("tp8", config, MODEL)
    assert lines[0] == "tp8: 2 nodes x 4 GPU(s), TP=8, processes over ssh; launcher: native"
    native, ray = (
        lines.index("  launcher native (the plan's); endpoint http://tray0:8000:"),
        next(i for i, line in enumerate(lines) if line.startswith("  launcher ray (instead)")),
    )
    assert native < ray
    assert lines[native + 1].startswith("    node 0 @ tray0 [serve]: CUDA_VISIBLE_DEVICES=0,1,2,3 ")
    assert "--node-rank 1" in lines[native + 2] and "--headless" in lines[native + 2]
    assert (
        "[ray-worker] (once Ray lists 1 node)" in lines[ray + 2]
        and "[serve] (once Ray lists 2 nodes)" in lines[ray + 3]
    )
    # Two nodes on one host get disjoint GPUs.
    same_host = describe_cluster("x", server_config(nodes=2, tensor_parallel_size=2), MODEL)
    assert "CUDA_VISIBLE_DEVICES=0 " in same_host[2] and "CUDA_VISIBLE_DEVICES=1 " in same_host[3]


def test_byog_plan_lists_per_node_launch(tmp_path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "name: mn\nmodel: {path: /models/m}\nservers:\n"
        "  tp8: {runtime: ssh, nodes: 2, hosts: [ubuntu@tray0, ubuntu@tray1], tensor_parallel_size: 8, launcher: ray}\n"
        "baseline: tp8\nworkloads:\n  - {kind: batch, batch_sizes: [1], isl: [32], osl: [16]}\n"
    )
    out = json.loads(CliRunner().invoke(app, ["plan", str(plan), "--json"]).output)
    lines = out["per_node_launch"]["tp8"]
    assert lines[1].startswith("  launcher ray (the plan's)")
    assert sum("[ray-worker]" in line for line in lines) == 1 and sum("[headless]" in line for line in lines) == 1
    assert "per-node launch" in out["servers"][0]["command"]


def test_last_error_line_is_the_sentence_a_failed_node_leaves() -> None:
    log = (
        "(EngineCore pid=7) INFO loading\n(EngineCore pid=7) ERROR 11-30 08:10:01 [core.py:9] "
        "ValueError: current platform cpu does not support ray.\nINFO shutting down\n"
    )
    assert root_cause(log) == "ValueError: current platform cpu does not support ray."
    assert root_cause("Exception: The current node timed out during startup.") == (
        "Exception: The current node timed out during startup."
    )
    assert root_cause("INFO all good\n") is None
    wrapped = log + "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n"
    assert root_cause(wrapped) == "ValueError: current platform cpu does not support ray."
