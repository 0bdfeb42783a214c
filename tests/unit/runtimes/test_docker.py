"""The docker runtime's container spec and the image build helpers: pure logic, no engine needed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from byog.core.errors import EnvironmentProblem, UsageError
from byog.images import build, context, tags
from byog.images.engine import docker_client
from byog.runtimes import container as dk
from byog.runtimes.docker import DockerRuntime, DockerServer
from byog.runtimes.launch import vllm_serve_args
from byog.schemas.plan import ServerConfig, server_config
from byog.schemas.server import PreparedModel

# what `byog image build --flavour cpu-host` labels (its python3 is the host suite's: this Python's version)
CPU_HOST_LABELS = {
    "byog.accelerator": "cpu",
    "byog.host-python": "mount",
    "byog.flavour": "cpu-host",
    "byog.system-python": f"{sys.version_info.major}.{sys.version_info.minor}",
}
GPU_LABELS = {"byog.accelerator": "gpu", "byog.flavour": "gpu"}


@pytest.fixture()
def model(tmp_path: Path) -> PreparedModel:
    model_dir = tmp_path / "models" / "tiny"
    model_dir.mkdir(parents=True)
    (model_dir / "config.json").write_text("{}")
    return PreparedModel(path=str(model_dir), served_name="tiny", tokenizer=str(model_dir), max_model_len=2048)


def spec(
    config: ServerConfig, model: PreparedModel, labels: dict[str, str], *, bridge: bool, environ=None
) -> dk.ContainerSpec:
    return dk.container_spec(
        "cand",
        config,
        model,
        image_ref="img:1",
        image_labels=labels,
        run_id="r1",
        host_port=40123,
        bridge=bridge,
        environ=environ or {},
    )


def test_host_network_spec_binds_loopback_and_passes_args_through(model: PreparedModel) -> None:
    config = server_config(
        runtime="docker", image="img:1", args=["--enforce-eager", "--max-num-seqs", "8"], tensor_parallel_size=2
    )
    s = spec(config, model, GPU_LABELS, bridge=False)
    assert s.network_mode == "host" and s.ports is None
    # vLLM itself listens on 127.0.0.1:<the free port>; the plan's args follow byog's, verbatim.
    assert s.command[:7] == [model.path, "--host", "127.0.0.1", "--port", "40123", "--served-model-name", "tiny"]
    assert s.command[-5:] == ["--tensor-parallel-size", "2", "--enforce-eager", "--max-num-seqs", "8"]
    assert s.entrypoint is None  # the image's own `vllm serve`
    assert s.ipc_mode == "host"
    kwargs = s.run_kwargs()
    assert kwargs["ipc_mode"] == "host" and kwargs["network_mode"] == "host" and kwargs["detach"] is True


def test_bridge_spec_publishes_on_loopback_only(model: PreparedModel) -> None:
    s = spec(server_config(runtime="docker", image="img:1"), model, GPU_LABELS, bridge=True)
    assert s.network_mode is None
    assert s.ports == {"8000/tcp": ("127.0.0.1", 40123)}
    assert s.command[1:5] == ["--host", "0.0.0.0", "--port", "8000"]


def test_gpu_requests_follow_image_and_config(model: PreparedModel) -> None:
    from docker.types import DeviceRequest

    gpu_all = spec(server_config(runtime="docker", image="img:1"), model, GPU_LABELS, bridge=False)
    assert gpu_all.gpus == "all"
    request = gpu_all.run_kwargs()["device_requests"][0]
    assert isinstance(request, DeviceRequest) and request["Count"] == -1 and request["Capabilities"] == [["gpu"]]

    chosen = spec(server_config(runtime="docker", image="img:1", gpus=[2, 3]), model, GPU_LABELS, bridge=False)
    assert chosen.run_kwargs()["device_requests"][0]["DeviceIDs"] == ["2", "3"]

    cpu = spec(server_config(runtime="docker", image="img:1"), model, CPU_HOST_LABELS, bridge=False)
    assert cpu.gpus is None and "device_requests" not in cpu.run_kwargs()
    none = spec(server_config(runtime="docker", image="img:1", gpus="none"), model, GPU_LABELS, bridge=False)
    assert "device_requests" not in none.run_kwargs()


def test_hf_token_passed_through_and_redacted_in_record(model: PreparedModel) -> None:
    environ = {"HF_TOKEN": "hf_secret_value", "HF_HUB_OFFLINE": "1", "UNRELATED": "x"}
    config = server_config(runtime="docker", image="img:1", env={"VLLM_CPU_KVCACHE_SPACE": "4"})
    s = spec(config, model, GPU_LABELS, bridge=False, environ=environ)
    assert s.environment["HF_TOKEN"] == "hf_secret_value"
    assert s.environment["HF_HUB_OFFLINE"] == "1" and "UNRELATED" not in s.environment
    assert s.environment["VLLM_CPU_KVCACHE_SPACE"] == "4"  # the plan's env wins over byog's default
    record = s.record()
    assert record["environment"]["HF_TOKEN"] == "<redacted>"
    assert "hf_secret_value" not in repr(record)


def test_mounts_hf_cache_and_model_read_only(model: PreparedModel, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    s = spec(server_config(runtime="docker", image="img:1"), model, GPU_LABELS, bridge=False)
    assert s.volumes[str(tmp_path / "hf")] == {"bind": "/root/.cache/huggingface", "mode": "rw"}
    assert s.volumes[model.path] == {"bind": model.path, "mode": "ro"}
    assert s.environment["HF_HOME"] == "/root/.cache/huggingface"
    hub = PreparedModel(path="org/model", served_name="m", tokenizer="org/model")
    s_hub = spec(server_config(runtime="docker", image="img:1"), hub, GPU_LABELS, bridge=False)
    assert list(s_hub.volumes) == [str(tmp_path / "hf")]  # a hub id is not a path to mount


def test_cpu_host_image_mounts_this_python_read_only(model: PreparedModel) -> None:
    import byog

    s = spec(server_config(runtime="docker", image="img:1"), model, CPU_HOST_LABELS, bridge=False)
    assert s.entrypoint == [sys.executable, "-m", "byog.images.vllm_entry", "serve"]
    prefix = str(Path(sys.prefix).resolve())
    assert s.volumes[prefix] == {"bind": prefix, "mode": "ro"}
    package = Path(byog.__file__).resolve().parent
    assert any(package.is_relative_to(path) for path in s.volumes), "byog's own source must be visible inside"


def test_a_venv_of_the_system_python_mounts_the_venv_only_and_the_system_python_itself_is_refused(
    model: PreparedModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from byog.core.errors import EnvironmentProblem

    venv = tmp_path / "venv"
    monkeypatch.setattr(sys, "prefix", str(venv))
    monkeypatch.setattr(sys, "base_prefix", "/usr")  # Debian's python3 -m venv
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    carrying = {**CPU_HOST_LABELS, "byog.system-python": version}
    s = spec(server_config(runtime="docker", image="img:1"), model, carrying, bridge=False)
    assert str(venv.resolve()) in s.volumes and "/usr" not in s.volumes  # the image's own python3 runs it
    older = {k: v for k, v in CPU_HOST_LABELS.items() if k != "byog.system-python"}
    with pytest.raises(EnvironmentProblem, match="built before byog added it"):  # an image from before
        spec(server_config(runtime="docker", image="img:1"), model, older, bridge=False)
    with pytest.raises(EnvironmentProblem, match="carries Python 3.0"):
        spec(
            server_config(runtime="docker", image="img:1"),
            model,
            {**CPU_HOST_LABELS, "byog.system-python": "3.0"},
            bridge=False,
        )
    monkeypatch.setattr(sys, "prefix", "/usr")
    with pytest.raises(EnvironmentProblem, match="system's own"):
        spec(server_config(runtime="docker", image="img:1"), model, CPU_HOST_LABELS, bridge=False)


def test_labels_name_run_server_and_owner(model: PreparedModel) -> None:
    import os

    s = spec(server_config(runtime="docker", image="img:1"), model, GPU_LABELS, bridge=False)
    assert s.labels["byog.managed"] == "1" and s.labels["byog.run"] == "r1" and s.labels["byog.server"] == "cand"
    assert s.labels["byog.owner-pid"] == str(os.getpid())
    assert s.name == "byog-r1-cand"
    assert dk.container_name("2026 11/29", "a b") == "byog-2026-11-29-a-b"


def test_run_id_is_the_run_directory_name(tmp_path: Path) -> None:
    assert dk.run_id_of(tmp_path / "runs" / "20261129-abc" / "servers" / "baseline") == "20261129-abc"


def test_no_engine_is_an_environment_problem(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")
    with pytest.raises(EnvironmentProblem) as caught:
        docker_client()
    assert caught.value.exit_code == 3
    assert "no Docker engine answers at unix://" in str(caught.value) and "scripts/start-dockerd.sh" in str(
        caught.value
    )


def test_no_engine_cli_exits_3_with_one_sentence(monkeypatch, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from byog.cli import app

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")
    result = CliRunner().invoke(app, ["image", "inspect", "byog-eval:0.1.0-cpu-host"])
    assert result.exit_code == 3
    assert "no Docker engine answers" in result.output and "Traceback" not in result.output


def test_build_hint_names_the_flavour() -> None:
    assert tags.build_hint(tags.default_tag("cpu-host")) == "build it with `byog image build --flavour cpu-host`"
    assert tags.build_hint(tags.default_tag("cpu")) == "build it with `byog image build --flavour cpu`"
    assert tags.build_hint("byog-eval:mine-gpu").endswith("--flavour gpu --tag byog-eval:mine-gpu`")
    assert "pin the digest" in tags.build_hint("byog-eval@sha256:" + "0" * 64)


def test_cpu_pins_come_from_pyproject() -> None:
    root = Path(__file__).resolve().parents[3]
    pins = context.cpu_pins(root)
    assert context.pinned_version(pins["vllm-cpu"]) == "0.32.0"
    assert pins["lm-eval"].startswith("lm-eval[api]==")
    assert context.pinned_version("lm-eval[api]==0.4.13") == "0.4.13"


def test_unknown_flavour_is_a_usage_error() -> None:
    from byog.core.errors import UsageError

    with pytest.raises(UsageError):
        build.build_image("tpu")


def test_a_docker_server_without_an_image_is_bad_input(model: PreparedModel, tmp_path: Path) -> None:
    """A config the plan's validation did not see (a copy with the image taken out) is refused
    before any engine is asked, as bad input (exit 2), not as a failed check (exit 1)."""
    no_image = server_config(runtime="docker", image="img:1").model_copy(update={"image": None})
    with pytest.raises(UsageError, match="names no 'image'") as caught:
        DockerServer("cand", no_image, model, tmp_path / "cand", client=None)
    assert caught.value.exit_code == 2
    with pytest.raises(UsageError, match="asks for the 'local' runtime") as caught:
        DockerRuntime(client=object()).launch("cand", server_config(runtime="local"), model, tmp_path / "cand")
    assert caught.value.exit_code == 2


def test_an_image_of_another_architecture_is_refused_before_any_container() -> None:
    from byog.core.errors import EnvironmentProblem
    from byog.runtimes.docker import check_image_platform

    check_image_platform("img", {"Architecture": "amd64"}, {"Architecture": "x86_64"})  # the engine says x86_64
    with pytest.raises(
        EnvironmentProblem, match=r"image img is linux/arm64 but this Docker engine's host is linux/amd64"
    ):
        check_image_platform("img", {"Architecture": "arm64"}, {"Architecture": "x86_64"})


@pytest.mark.parametrize(
    ("gpus", "request_shown"),
    [(None, ["--gpus", "all"]), ([0, 1], ["--gpus", "device=0,1"]), ("none", None)],
)
def test_the_planned_launch_is_the_container_spec_byog_would_run(
    model: PreparedModel, gpus: object, request_shown: list[str] | None
) -> None:
    """`byog plan` and `reproduce --dry-run` show the device request ``gpus_for`` chooses, not always all GPUs."""
    image = "vllm/vllm-openai@sha256:" + "a" * 64
    config = server_config(runtime="docker", image=image, gpus=gpus, env={"HF_TOKEN": "secret", "X": "1"})
    planned = DockerRuntime().planned("cand", config, model, cpu_build=False)
    argv = planned.argv
    assert argv is not None and argv[:2] == ["docker", "run"]
    if request_shown is None:
        assert "--gpus" not in argv
    else:
        at = argv.index("--gpus")
        assert argv[at : at + 2] == request_shown
    assert "-p" in argv and argv[argv.index("-p") + 1] == "127.0.0.1:PORT:8000"
    assert argv[argv.index(image) + 1 :] == vllm_serve_args(config, model, "0.0.0.0", dk.CONTAINER_PORT)
    assert "HF_TOKEN=<redacted>" in argv and "secret" not in planned.command
    assert planned.env["X"] == "1"
