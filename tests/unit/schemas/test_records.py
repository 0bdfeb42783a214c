"""env.json and server.json as the runtimes write them, read through EnvRecord and ServerRecord."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from byog.schemas.env import CpuRecord, EnvRecord, NvmlRecord
from byog.schemas.server import ServerRecord

GPU_ENV = {
    "os": {"system": "Linux", "release": "6.8", "machine": "x86_64"},
    "python": "3.12.3",
    "cpu": {"model": "Intel Xeon", "logical_cores": 192},
    "gpu": {
        "available": True,
        "count": 2,
        "driver_version": "570.124.06",
        "cuda_driver_version": "12.8",
        "gpus": [
            {"index": i, "name": "NVIDIA H200", "memory_total_bytes": 150 * 2**30, "nvlink_active": 18} for i in (0, 1)
        ],
        "topology": [["self", "nvlink"], ["nvlink", "self"]],
    },
}


def test_a_gpu_fingerprint_reads_as_typed_fields_and_keeps_what_it_does_not_name() -> None:
    env = EnvRecord.model_validate(GPU_ENV)
    assert isinstance(env.cpu, CpuRecord) and env.cpu.logical_cores == 192
    assert isinstance(env.gpu, NvmlRecord) and env.gpu.driver_version == "570.124.06"
    assert [card.name for card in env.gpu.gpus] == ["NVIDIA H200"] * 2
    assert env.gpu.gpus[0].model_extra == {"nvlink_active": 18}


def test_an_older_fingerprint_with_a_cpu_string_and_top_level_gpus_still_reads() -> None:
    env = EnvRecord.model_validate({"cpu": "AMD EPYC", "cpu_count": 2, "gpus": [{"name": "NVIDIA A100"}]})
    assert env.cpu == "AMD EPYC" and env.cpu_count == 2 and env.gpus[0].name == "NVIDIA A100"


def test_a_field_of_the_wrong_type_does_not_validate() -> None:
    with pytest.raises(ValidationError):
        EnvRecord.model_validate({"gpu": {"gpus": [{"memory_total_bytes": "a lot"}]}})


def test_a_multi_node_record_reads_its_nodes_steps_and_fingerprints() -> None:
    record = ServerRecord.model_validate(
        {
            "name": "tp3",
            "runtime": "ssh",
            "tensor_parallel_size": 3,
            "nodes": [
                {
                    "rank": 0,
                    "address": "10.0.0.1",
                    "runtime": "ssh",
                    "marker": "tp3-node0-abc",
                    "steps": [{"role": "serve", "phase": 1, "argv": ["vllm", "serve"], "env": {}, "log": "node0.log"}],
                    "fingerprint": GPU_ENV,
                },
                {"rank": 1, "steps": [], "fingerprint": {"error": "exit 1: no python"}},
            ],
        }
    )
    assert record.nodes is not None and [n.rank for n in record.nodes] == [0, 1]
    first, second = record.nodes
    assert first.steps[0].argv == ["vllm", "serve"] and first.model_extra == {"marker": "tp3-node0-abc"}
    assert first.fingerprint is not None and first.fingerprint.gpu is not None
    assert second.fingerprint is not None and second.fingerprint.model_extra == {"error": "exit 1: no python"}
    with pytest.raises(ValidationError):
        ServerRecord.model_validate({"name": "tp3", "nodes": [{"address": "10.0.0.1"}]})  # a node without its rank


def test_the_gpu_fingerprint_records_the_compute_capability(monkeypatch: pytest.MonkeyPatch) -> None:
    """What decides the default numerics control (an fp8 KV cache from 8.9), from NVML as vLLM reads it."""
    import sys
    import types

    from byog.images.fingerprint import gpu_fingerprint

    fake = types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: b"NVIDIA H200",
        nvmlDeviceGetUUID=lambda h: b"GPU-5fa0c2d4-0000-0000-0000-000000000000",
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=150754820096),
        nvmlDeviceGetMaxClockInfo=lambda h, kind: 1980,
        nvmlDeviceGetClockInfo=lambda h, kind: 345,
        nvmlDeviceGetPowerManagementLimit=lambda h: 700000,
        nvmlDeviceGetCudaComputeCapability=lambda h: (9, 0),
        nvmlSystemGetDriverVersion=lambda: "570.124.06",
        nvmlSystemGetCudaDriverVersion=lambda: 12080,
        NVML_CLOCK_SM=0,
        NVML_CLOCK_MEM=1,
        NVML_NVLINK_MAX_LINKS=0,
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    [card] = gpu_fingerprint()["gpus"]
    assert card["compute_capability"] == "9.0" and card["uuid"] == "GPU-5fa0c2d4-0000-0000-0000-000000000000"
    assert EnvRecord.model_validate({"gpu": gpu_fingerprint()}).gpu.gpus[0].model_extra["compute_capability"] == "9.0"
