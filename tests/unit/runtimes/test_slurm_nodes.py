"""The slurm node runtime's pure parts: the srun argv (Pyxis flags as Pyxis documents them), the
allocation's GPUs as scontrol prints them, node choice and its refusals, and the architecture name.

The runtime itself runs on a real Slurm in tests/integration/test_cluster_slurm_cpu.py; Pyxis
cannot run here, so its part of the argv is held against Pyxis's documented flags.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.core.errors import EnvironmentProblem, UsageError
from byog.images.fingerprint import oci_arch
from byog.runtimes.slurm_nodes import (
    Allocation,
    container_for,
    current_allocation,
    export_flag,
    gpus_from_gres,
    pick_nodes,
    srun_argv,
)
from byog.schemas.plan import server_config

# Pyxis's srun flags (github.com/NVIDIA/pyxis, wiki "Usage": `srun --help` with pyxis loaded).
PYXIS_FLAGS = {
    "--container-image",
    "--container-mounts",
    "--container-workdir",
    "--container-name",
    "--container-save",
    "--container-mount-home",
    "--no-container-mount-home",
    "--container-remap-root",
    "--no-container-remap-root",
    "--container-entrypoint",
    "--no-container-entrypoint",
    "--container-writable",
    "--container-readonly",
    "--container-env",
}
MOUNT_FLAGS = {"ro", "rw", "rprivate", "private", "rslave", "slave", "rshared", "shared", "nosuid", "nodev", "noexec"}


def test_one_step_on_one_node_of_the_job() -> None:
    argv = srun_argv("77", "tray2", "kimi-node2-abc-headless", ["python3", "-m", "x"], {"A": "1"}, gpus_per_node=4)
    assert argv == [
        "srun",
        "--jobid=77",
        "--nodes=1",
        "--ntasks=1",
        "--nodelist=tray2",
        "--overlap",
        "--kill-on-bad-exit=1",
        "--job-name=kimi-node2-abc-headless",
        "--gpus-per-node=4",
        "--export=ALL,A=1",
        "python3",
        "-m",
        "x",
    ]
    assert "--gpus-per-node" not in " ".join(srun_argv("77", "n1", "s", ["true"], {}))  # a CPU build asks for none


def test_a_value_with_a_comma_is_exported_by_name() -> None:
    """srun splits --export at commas: such a value travels in srun's own environment, named only."""
    assert export_flag({"PLAIN": "x", "LIST": "a,b"}) == "--export=ALL,PLAIN=x,LIST"


def test_the_pyxis_argv_uses_only_pyxis_documented_flags(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    run_dir = tmp_path / "runs" / "r1"
    container = container_for("byog-eval@sha256:abc", str(model), run_dir)
    env = {"NCCL_MNNVL_ENABLE": "1", "VLLM_HOST_IP": "tray0"}
    argv = srun_argv("9", "tray0", "s", ["python3", "-m", "byog.images.vllm_entry"], env, container=container)
    pyxis = [a for a in argv if "container" in a]
    assert pyxis and all(a.split("=", 1)[0] in PYXIS_FLAGS for a in pyxis), pyxis
    flags = dict(a.split("=", 1) for a in pyxis)
    assert flags["--container-image"] == "byog-eval@sha256:abc"
    mounts = flags["--container-mounts"].split(",")
    for mount in mounts:  # SRC:DST[:FLAGS], flags joined by "+"
        parts = mount.split(":")
        assert len(parts) in (2, 3) and parts[0].startswith("/") and parts[1].startswith("/"), mount
        if len(parts) == 3:
            assert set(parts[2].split("+")) <= MOUNT_FLAGS, mount
    sources = [m.split(":")[0] for m in mounts]
    assert str(model) in sources and str(run_dir) in sources  # the model, the run directory
    assert any(m.endswith("/byog:/opt/byog-src/byog:ro") for m in mounts)  # and byog's package
    assert flags["--container-workdir"] == str(run_dir)
    # The plan's variables win over the image's: every exported name is named to Pyxis too.
    assert set(flags["--container-env"].split(",")) == set(env)
    assert argv.index("--overlap") < argv.index(pyxis[0]) < argv.index("python3")  # srun flags, then the command


def test_a_hub_model_is_not_mounted(tmp_path: Path) -> None:
    container = container_for("img", "org/model", tmp_path)
    assert not any(m.startswith("org/") for m in container.mounts)


@pytest.mark.parametrize(
    ("gres", "gpus"),
    [("gpu:4(IDX:0-3)", 4), ("gpu(IDX:0-3)", 4), ("gpu:h100:2(IDX:0,2)", 2), ("gpu(IDX:1,3-4)", 3), ("", 0)],
)
def test_gpus_from_scontrols_gres(gres: str, gpus: int) -> None:
    assert gpus_from_gres(gres) == gpus


ALLOC = Allocation("42", ["n1", "n2", "n3"], {"n1": "10.0.0.1", "n2": "10.0.0.2", "n3": "10.0.0.3"}, {"n1": 4, "n2": 4})


def test_nodes_are_the_allocations_first_n_or_the_plans_hosts() -> None:
    assert pick_nodes(ALLOC, "s", 2, [], 0) == ["n1", "n2"]
    assert pick_nodes(ALLOC, "s", 2, ["n2", "n1"], 4) == ["n2", "n1"]


def test_refusals_name_the_job_and_what_it_lacks() -> None:
    with pytest.raises(EnvironmentProblem, match="needs 4 nodes but Slurm job 42 holds 3") as few:
        pick_nodes(ALLOC, "tp16", 4, [], 0)
    assert few.value.exit_code == 3
    with pytest.raises(EnvironmentProblem, match=r"needs 4 GPUs per node but Slurm job 42 holds fewer \(n3: 0\)"):
        pick_nodes(ALLOC, "tp8", 3, [], 4)
    with pytest.raises(UsageError, match="hosts tray9 are not nodes of Slurm job 42"):
        pick_nodes(ALLOC, "tp8", 2, ["n1", "tray9"], 0)


def test_outside_an_allocation_is_one_sentence_exit_2() -> None:
    with pytest.raises(UsageError) as err:
        current_allocation({})
    assert err.value.exit_code == 2 and "SLURM_JOB_ID is unset" in str(err.value) and "\n" not in str(err.value)


def test_architecture_names() -> None:
    assert [oci_arch(m) for m in ("x86_64", "aarch64", "arm64", "AMD64")] == ["amd64", "arm64", "arm64", "amd64"]


def test_the_slurm_runtime_is_for_multi_node_servers() -> None:
    with pytest.raises(ValueError, match="'slurm' runtime runs multi-node servers"):
        server_config(runtime="slurm")
    config = server_config(runtime="slurm", nodes=2, hosts=["a", "b"], platform="linux/arm64")
    assert config.hosts == ["a", "b"] and config.platform == "linux/arm64"
    with pytest.raises(ValueError):
        server_config(runtime="slurm", nodes=2, platform="linux/ppc64le")
