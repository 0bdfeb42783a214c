"""The docker runtime on a REAL Docker engine with REAL CPU vLLM inside the container.

The image is the ``cpu-host`` flavour (a debootstrapped Debian root filesystem, ``docker import``ed;
the host's Python prefix and the SmolLM2 directory mounted read-only), built on first use.
The engine must already answer (scripts/start-dockerd.sh); without one these tests skip, unless
BYOG_REQUIRE_DOCKER=1 (CI) makes that a failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from byog.core.errors import ByogError, EnvironmentProblem
from byog.core.reporter import NullReporter
from byog.images.build import default_tag
from byog.runtimes import cleanup
from byog.runtimes import container as spec_module
from byog.runtimes import docker as dk
from byog.schemas.plan import (
    BUILTIN_MODEL,
    BatchWorkload,
    ModelSpec,
    Plan,
    server_config,
)
from tests.support.containers import wait_until_gone
from tests.support.images import cpu_host_image as ensure_cpu_host_image
from tests.support.images import docker_client_or_skip
from tests.support.processes import byog_process, interrupt, wait_while_running

pytestmark = [pytest.mark.integration, pytest.mark.docker]

IMAGE = default_tag("cpu-host")
FAKE_TOKEN = "hf_byog_test_token_not_a_secret"


@pytest.fixture(scope="module")
def client():
    return docker_client_or_skip()


@pytest.fixture(scope="module")
def cpu_host_image(client) -> str:
    assert ensure_cpu_host_image(client) == IMAGE
    return IMAGE


def containers_of_run(client, run_id: str) -> list[str]:
    return [c.name for c in client.containers.list(all=True, filters={"label": f"byog.run={run_id}"})]


def _assert_container_setup(container, run_id: str, model_path: str) -> None:
    container.reload()
    assert container.labels["byog.run"] == run_id and container.labels["byog.server"] == "docker"
    assert container.attrs["HostConfig"]["IpcMode"] == "host"
    assert container.attrs["HostConfig"]["NetworkMode"] == "host"
    assert not container.attrs["HostConfig"].get("DeviceRequests")  # the CPU flavour asks for no GPU
    assert f"HF_TOKEN={FAKE_TOKEN}" in container.attrs["Config"]["Env"]  # passed through (never recorded)
    mounts = {m["Destination"]: m for m in container.attrs["Mounts"]}
    assert mounts[model_path]["RW"] is False and mounts[sys.prefix]["RW"] is False


def _streamed_completion_tokens(base_url: str, model: str, max_tokens: int) -> int:
    """One streamed completion: the tokens its final usage chunk counts (the server's own count)."""
    with httpx.stream(
        "POST",
        f"{base_url}/v1/completions",
        timeout=120,
        json={
            "model": model,
            "prompt": "1 2 3",
            "max_tokens": max_tokens,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    ) as response:
        chunks = [line for line in response.iter_lines() if line.startswith("data: ") and line != "data: [DONE]"]
    return int(json.loads(chunks[-1][6:])["usage"]["completion_tokens"])


def test_docker_server_benches_records_and_leaves_nothing(
    client, cpu_host_image, smollm2, tmp_path, monkeypatch
) -> None:
    from byog.bench.sweep import run_bench_for_server
    from byog.core.paths import RunDir

    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    run_id = f"dockertest-{os.getpid()}"
    rd = RunDir(tmp_path / "runs" / run_id)
    config = server_config(runtime="docker", image=cpu_host_image, args=["--enforce-eager"])
    plan = Plan(
        name="docker-one-point",
        model=ModelSpec(path=BUILTIN_MODEL, max_model_len=4096),
        servers={"docker": config},
        baseline="docker",
        workloads=[BatchWorkload(batch_sizes=[1], isl=[32], osl=[16], warmup_waves=0, waves=1)],
        remeasure=0,  # re-measuring a flagged point is tests/unit/bench/test_sweep.py's, not this test's
    )
    # Port taken -> pick another: the first port handed out is held by a listener here.
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen(1)
    taken_port = held.getsockname()[1]
    ports = iter([taken_port])
    real_free_port = dk.free_port
    monkeypatch.setattr(dk, "free_port", lambda host="127.0.0.1": next(ports, None) or real_free_port(host))
    try:
        server = dk.DockerRuntime(client).launch("docker", config, smollm2, rd.server_dir("docker"))
    finally:
        held.close()
    try:
        assert server.spec.host_port != taken_port
        _assert_container_setup(server._container, run_id, smollm2.path)

        result = run_bench_for_server(plan, "docker", server, rd, NullReporter())
        assert result["run"] and not result["failed"], result
        # Validity is the bench's business; here only a loaded 2-core box may flag the client.
        reasons = [r for rs in result["invalid"].values() for r in rs]
        assert all(r.startswith("client saturated") for r in reasons), result
        point = json.loads(rd.bench_point("docker", result["run"][0]).read_text())
        assert point  # the raw point record exists and parses

        assert _streamed_completion_tokens(server.endpoint.base_url, server.endpoint.model, 8) == 8

        record = json.loads(rd.server_record("docker").read_text())
        text = rd.server_record("docker").read_text()
        assert FAKE_TOKEN not in text and record["env"]["HF_TOKEN"] == "<redacted>"
        assert record["runtime"] == "docker" and record["image"] == cpu_host_image
        assert record["image_id"] == client.images.get(cpu_host_image).id
        assert record["image_labels"]["byog.flavour"] == "cpu-host"
        assert record["version"]["version"].startswith("0.32")
        assert record["models"]["data"][0]["id"] == smollm2.served_name
        assert record["container"]["labels"]["byog.run"] == run_id
        assert record["argv"][:4] == [sys.executable, "-m", "byog.images.vllm_entry", "serve"]
        log = rd.server_log("docker").read_text()
        assert "address already in use" in log.lower()  # the first attempt's vLLM could not bind
        assert "Application startup complete" in log  # the container's log is streamed in
    finally:
        server.stop()
    assert wait_until_gone(client, f"byog.run={run_id}", timeout_s=30) == []


def test_exit_before_healthy_fails_fast_with_log_tail(client, cpu_host_image, smollm2, tmp_path) -> None:
    config = server_config(runtime="docker", image=cpu_host_image, args=["--enforce-eager", "--no-such-flag"])
    run_dir = tmp_path / "runs" / f"dockerfail-{os.getpid()}"
    started = time.monotonic()
    with pytest.raises(ByogError) as err:
        dk.DockerRuntime(client).launch("broken", config, smollm2, run_dir / "servers" / "broken")
    assert time.monotonic() - started < 180
    assert "exited before it became healthy" in str(err.value) and "--no-such-flag" in str(err.value)
    assert containers_of_run(client, run_dir.name) == []


def test_missing_image_says_how_to_build(client, smollm2, tmp_path) -> None:
    config = server_config(runtime="docker", image="byog-eval:0.0.0-nope-cpu-host")
    with pytest.raises(EnvironmentProblem) as err:
        dk.DockerRuntime(client).launch("x", config, smollm2, tmp_path / "runs" / "r" / "servers" / "x")
    assert "is not on this Docker engine" in str(err.value)
    assert "byog image build --flavour cpu-host --tag byog-eval:0.0.0-nope-cpu-host" in str(err.value)


def test_orphans_of_a_dead_byog_are_swept(client, cpu_host_image) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    labels = {**spec_module.run_labels("orphan-test", "ghost"), "byog.owner-pid": str(dead.pid)}
    orphan = client.containers.run(
        cpu_host_image,
        entrypoint=["sleep", "600"],
        labels=labels,
        detach=True,
        network_mode="none",
        name=f"byog-orphan-test-{os.getpid()}",
    )
    mine = client.containers.run(
        cpu_host_image,
        entrypoint=["sleep", "600"],
        labels=spec_module.run_labels("orphan-test", "alive"),
        detach=True,
        network_mode="none",
        name=f"byog-orphan-live-{os.getpid()}",
    )
    try:
        removed = cleanup.sweep_orphans(client)
        assert orphan.name in removed and mine.name not in removed  # only the dead owner's container goes
        assert containers_of_run(client, "orphan-test") == [mine.name]
    finally:
        for container in (orphan, mine):
            with contextlib.suppress(Exception):
                container.remove(force=True)


PLAN = """\
name: docker-interrupt
model: {{path: builtin:smollm2-135m-instruct, max_model_len: 4096}}
servers:
  only: {{runtime: docker, image: "{image}", args: ["--enforce-eager"]}}
baseline: only
workloads:
  - {{kind: batch, name: decode, batch_sizes: [1], isl: [32], osl: [2000], warmup_waves: 0, waves: 50}}
"""


def test_interrupted_byog_run_removes_its_container(client, cpu_host_image, tmp_path) -> None:
    """SIGTERM while vLLM is still starting in its container, as a CI runner or an orchestrator stops a
    job at any moment: the start is abandoned and the container removed. (Ctrl-C mid-point is the
    local runtime's test; both signals take the one path, tests/unit/pipeline/test_interrupt.py.)"""
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN.format(image=cpu_host_image))
    run_dir = tmp_path / f"dockerint-sigterm-{os.getpid()}"
    log = run_dir / "servers" / "only" / "server.log"

    def vllm_starting_in_its_container() -> bool:
        return bool(containers_of_run(client, run_dir.name)) and "non-default args" in _text(log)

    with byog_process("run", "--plan", str(plan), "--run-dir", str(run_dir), cwd=tmp_path) as proc:
        wait_while_running(proc, vllm_starting_in_its_container, "saw vLLM start in its container")
        output = interrupt(proc, signal.SIGTERM)
    assert proc.returncode == 130, output[-3000:]
    assert "Traceback" not in output
    assert not (run_dir / "servers" / "only" / "server.json").exists()  # interrupted before it was healthy
    assert wait_until_gone(client, f"byog.run={run_dir.name}", timeout_s=30) == []


def _text(path: Path) -> str:
    return path.read_text(errors="replace") if path.is_file() else ""
