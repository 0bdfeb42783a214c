"""One line of hardware per env.json, and whether two runs ran on the same kind."""

from __future__ import annotations

from byog.analysis.hardware import describe, same_kind
from byog.schemas.env import EnvRecord


def _env(doc: dict) -> EnvRecord:
    return EnvRecord.model_validate(doc)


H200 = {"gpu": {"driver_version": "570.1", "gpus": [{"name": "NVIDIA H200", "memory_total_bytes": 150 * 2**30}] * 8}}


def test_gpus_are_counted_by_model_with_their_memory_and_driver() -> None:
    assert describe(_env(H200)) == "8 × NVIDIA H200 (150.0 GiB), driver 570.1"


def test_without_a_gpu_the_cpu_is_described_in_either_fingerprint_shape() -> None:
    assert describe(_env({"cpu": {"model": "AMD EPYC", "logical_cores": 2}})) == "AMD EPYC, 2 cores, no GPU"
    assert describe(_env({"cpu": "AMD EPYC", "cpu_count": 2})) == "AMD EPYC, 2 cores, no GPU"
    assert describe(_env({})) == "unknown CPU, no GPU"


def test_same_kind_is_the_same_accelerators_else_the_same_cpu() -> None:
    seven = {"gpu": {"gpus": [{"name": "NVIDIA H200"}] * 7}}
    assert same_kind(_env(H200), _env({"gpus": [{"name": "NVIDIA H200"}] * 8}))  # the older shape too
    assert not same_kind(_env(H200), _env(seven))
    assert same_kind(
        _env({"cpu": "AMD EPYC", "cpu_count": 2}), _env({"cpu": {"model": "AMD EPYC", "logical_cores": 2}})
    )
    assert not same_kind(_env({"cpu": "AMD EPYC", "cpu_count": 2}), _env({"cpu": "AMD EPYC", "cpu_count": 4}))
