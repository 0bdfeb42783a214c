"""The generated multi-node Ray launch (TP16 over four 4-GPU trays): checked spec by spec."""

from __future__ import annotations

import pytest

from byog.core.errors import UsageError
from byog.runtimes.multinode import describe_launch, multinode_specs, parse_host
from byog.schemas.plan import ServerConfig
from byog.schemas.server import PreparedModel

HOSTS = ["ssh://ubuntu@tray0", "ssh://ubuntu@tray1", "ubuntu@tray2", "ssh://ubuntu@tray3:2222"]
MODEL = PreparedModel(path="moonshotai/Kimi-K3", served_name="kimi-k3", tokenizer="moonshotai/Kimi-K3")
IMAGE = "byog-eval:0.1.0-gpu@sha256:" + "ab" * 32


def tp16(**overrides) -> ServerConfig:
    return ServerConfig(
        runtime="docker",
        image=IMAGE,
        tensor_parallel_size=16,
        additional_config={"decode_backend": "latency_specialized"},
        **overrides,
    )


def test_tp16_over_four_trays_one_head_three_workers(monkeypatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    specs = multinode_specs(tp16(), MODEL, HOSTS, name="candidate", run_id="r7")
    assert [(s.rank, s.role, s.docker_host, s.node_ip) for s in specs] == [
        (0, "head", "ssh://ubuntu@tray0", "tray0"),
        (1, "worker", "ssh://ubuntu@tray1", "tray1"),
        (2, "worker", "ssh://ubuntu@tray2", "tray2"),
        (3, "worker", "ssh://ubuntu@tray3:2222", "tray3"),
    ]
    assert all(s.gpus_per_node == 4 and s.expected_nodes == 4 for s in specs)
    head, workers = specs[0], specs[1:]
    assert head.run_kwargs["command"] == ["ray start --block --head --port=6379 --node-ip-address=tray0"]
    assert [w.run_kwargs["command"] for w in workers] == [
        [f"ray start --block --address=tray0:6379 --node-ip-address=tray{i}"] for i in (1, 2, 3)
    ]
    for spec in specs:
        kw = spec.run_kwargs
        assert kw["image"] == IMAGE  # the same pinned image on every node
        assert kw["entrypoint"] == ["/bin/bash", "-c"]
        assert kw["network_mode"] == "host" and kw["ipc_mode"] == "host"
        assert kw["device_requests"] == [{"Driver": "", "Count": -1, "DeviceIDs": [], "Capabilities": [["gpu"]]}]
        assert kw["environment"]["VLLM_HOST_IP"] == spec.node_ip  # each node its own address
        assert kw["labels"]["byog.run"] == "r7" and kw["labels"]["byog.node-rank"] == str(spec.rank)
        assert kw["name"] == f"byog-r7-candidate-node{spec.rank}"
    # The server runs on the head only, with the whole TP size and Ray as the executor.
    assert all(w.serve_argv is None for w in workers)
    argv = head.serve_argv
    assert argv[:3] == ["vllm", "serve", "moonshotai/Kimi-K3"]
    assert argv[argv.index("--tensor-parallel-size") + 1] == "16"
    assert argv[-2:] == ["--distributed-executor-backend", "ray"]
    assert argv[argv.index("--additional-config") + 1] == '{"decode_backend": "latency_specialized"}'
    assert argv[argv.index("--host") + 1] == "127.0.0.1"


def test_chosen_gpus_and_an_explicit_backend_are_kept() -> None:
    config = tp16(gpus=[0, 1, 2, 3], args=["--distributed-executor-backend", "ray", "--max-num-seqs", "64"])
    head = multinode_specs(config, MODEL, HOSTS)[0]
    assert head.run_kwargs["device_requests"][0]["DeviceIDs"] == ["0", "1", "2", "3"]
    assert head.serve_argv.count("--distributed-executor-backend") == 1


def test_hf_token_reaches_nodes_but_not_the_printed_lines(monkeypatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_never_print_me")
    specs = multinode_specs(tp16(), MODEL, HOSTS)
    assert all(s.run_kwargs["environment"]["HF_TOKEN"] == "hf_never_print_me" for s in specs)
    text = "\n".join(describe_launch(tp16(), MODEL, HOSTS))
    assert "hf_never_print_me" not in text and "HF_TOKEN=<redacted>" in text


def test_describe_without_hosts_uses_placeholders_for_the_size() -> None:
    lines = describe_launch(tp16(), MODEL, name="candidate")
    assert lines[0] == "candidate: TP=16 DP=1 over 4 nodes x 4 GPUs = 16 GPUs, Ray cluster on node0:6379"
    assert sum("DOCKER_HOST=ssh://USER@node" in line and "docker run" in line for line in lines) == 4
    assert any("docker exec -d byog-plan-candidate-node0 vllm serve" in line for line in lines)
    single = describe_launch(ServerConfig(runtime="docker", image=IMAGE, tensor_parallel_size=4), MODEL)
    assert len(single) == 1 and "one node" in single[0]


def test_sizes_that_do_not_fill_the_hosts_are_refused() -> None:
    with pytest.raises(UsageError, match="cannot be spread"):
        multinode_specs(tp16(), MODEL, HOSTS[:3])
    with pytest.raises(UsageError, match="at least two hosts"):
        multinode_specs(tp16(), MODEL, HOSTS[:1])
    with pytest.raises(UsageError, match="ssh://"):
        parse_host("tcp://tray0:2375")
