"""Each runtime's config answers the facts byog asks of a server: where it runs, its GPUs, its image,
how a reproduction runs it; and the registry refuses a class that names no new runtime."""

from __future__ import annotations

from typing import Literal

import pytest

from byog.core.errors import UsageError
from byog.schemas.runtime_configs import SERVER_CONFIGS, LaunchedConfig, register_server_config, server_config

DIGEST = "sha256:" + "b" * 64


def test_where_each_runtime_runs() -> None:
    assert server_config().elsewhere() is None
    assert server_config(runtime="endpoint", url="http://127.0.0.1:8000").elsewhere() is None
    assert "elsewhere (http://10.0.0.9:8000)" in str(
        server_config(runtime="endpoint", url="http://10.0.0.9:8000").elsewhere()
    )
    assert server_config(runtime="docker", image="i").elsewhere() is None
    assert "other hosts (ssh://a)" in str(server_config(runtime="docker", image="i", hosts=["ssh://a"]).elsewhere())
    assert "srun steps" in str(server_config(runtime="slurm", nodes=2).elsewhere())


def test_gpus_and_images() -> None:
    assert server_config(env={"CUDA_VISIBLE_DEVICES": "2,3"}).gpu_indices() == [2, 3]
    assert server_config(env={"CUDA_VISIBLE_DEVICES": "GPU-uuid"}).gpu_indices() is None
    assert server_config(runtime="docker", image="i", gpus=[1]).gpu_indices() == [1]
    assert server_config(runtime="endpoint", url="http://x").gpu_indices() is None
    assert server_config(runtime="docker", image="i").image_ref() == "i"
    assert server_config().image_ref() is None


def test_a_reproduction_runs_locally_or_the_allowed_image_and_refuses_the_rest() -> None:
    assert server_config().reproduced_as("s", [], "") == {"runtime": "local"}
    pinned = f"repo@{DIGEST}"
    assert server_config(runtime="docker", image=pinned).reproduced_as("s", [DIGEST], "") == {
        "runtime": "docker",
        "image": pinned,
    }
    with pytest.raises(
        UsageError, match="not pinned by a digest you allow; pass --image s=IMAGE, or add its digest to HINT"
    ):
        server_config(runtime="docker", image=pinned).reproduced_as("s", [], "HINT")
    ssh = server_config(runtime="ssh", nodes=2, hosts=["a", "b"], ssh_options=["-p", "2"])
    with pytest.raises(UsageError, match=r"other hosts \(a, b\) with ssh options -p 2; .* --host s=HOST"):
        ssh.reproduced_as("s", [], "")


def test_the_registry_refuses_a_class_without_its_own_runtime_name() -> None:
    class Nameless(LaunchedConfig):
        pass

    class Impostor(LaunchedConfig):
        runtime: Literal["local"] = "local"

    for cls in (Nameless, Impostor):
        with pytest.raises(ValueError, match="'runtime' needs a default naming a runtime not yet registered"):
            register_server_config(cls)
    assert SERVER_CONFIGS["local"].__name__ == "LocalConfig"
