"""bench_row schema 4's microsecond gaps (byog.schemas.chunk_timing): every committed GPU run's
rows, rewritten in the new layout, give the same bench figures as the rows as recorded, to the
precision the report prints them (``byog.report.format.num``: 4 significant digits). The one
exception is what the report never prints and the rounding moves by design: an ITL percentile
is one measured gap (divided by its chunk's tokens), so it moves by at most the microsecond the
gap was rounded to (seen: 0.6 µs on a 6.5 ms ITL, the 4th digit)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from byog.analysis.bench_summary import summarize_bench
from byog.analysis.summary import plan_of
from byog.core.paths import RunDir
from byog.schemas import chunk_timing
from byog.schemas.bench import read_request_rows, read_request_table, write_request_rows

pytestmark = pytest.mark.gpu_evidence

RESULTS = Path(__file__).resolve().parents[3] / "benchmarks" / "results"
GPU_RUNS = sorted(p.parent for p in RESULTS.glob("h200*/**/plan.yaml") if (p.parent / "bench").is_dir())
PRINTED_DIGITS = 4


def _leaves(value: Any, where: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        return {k: v for key, inner in value.items() for k, v in _leaves(inner, f"{where}.{key}").items()}
    if isinstance(value, list):
        return {k: v for i, inner in enumerate(value) for k, v in _leaves(inner, f"{where}[{i}]").items()}
    return {where: value}


def _same_when_printed(where: str, old: Any, new: Any) -> bool:
    """Equal, or floats whose difference is below the printed resolution (half a unit of the 4th digit)."""
    if not (isinstance(old, float) and isinstance(new, float)):
        return bool(old == new)
    if old == new:
        return True
    if ".itl_s." in where:
        return abs(old - new) <= 1e-6
    unit = 10.0 ** (math.floor(math.log10(abs(old))) - (PRINTED_DIGITS - 1)) if old else 0.0
    return abs(old - new) <= unit / 2


def test_the_committed_gpu_runs_are_found() -> None:
    assert len(GPU_RUNS) >= 10, GPU_RUNS


@pytest.mark.parametrize("run", GPU_RUNS, ids=lambda p: str(p.relative_to(RESULTS)))
def test_microsecond_gaps_give_the_recorded_figures(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("*.log", "plots", "vllm"))
    rewritten = 0
    for rows_file in sorted((copy / "bench").glob("*/*.parquet")):
        before = read_request_table(rows_file)
        write_request_rows(rows_file, read_request_rows(rows_file))
        after = read_request_table(rows_file)
        assert after.column_names == before.column_names  # the reader gives both layouts the same columns
        old = np.array(before.column("chunk_t_ns").combine_chunks().flatten(), dtype=np.int64)
        new = np.array(after.column("chunk_t_ns").combine_chunks().flatten(), dtype=np.int64)
        assert np.array_equal(new, chunk_timing.to_us(old) * chunk_timing.NS_PER_US)
        rewritten += 1
    assert rewritten
    plan = plan_of(RunDir(run))
    recorded = _leaves(summarize_bench(RunDir(run), plan).model_dump(mode="json"))
    derived = _leaves(summarize_bench(RunDir(copy), plan).model_dump(mode="json"))
    assert recorded.keys() == derived.keys()
    differ = {k: (recorded[k], derived[k]) for k in recorded if not _same_when_printed(k, recorded[k], derived[k])}
    assert not differ


def test_gaps_invert_on_the_microsecond_grid() -> None:
    rng = np.random.default_rng(7)
    counts = rng.integers(0, 6, size=50)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    send = rng.integers(0, 2**52, size=50)
    times = np.repeat(send, counts) + np.cumsum(rng.integers(0, 10**8, size=int(offsets[-1])))
    gaps = chunk_timing.gaps_us(send, offsets, times)
    assert np.array_equal(chunk_timing.chunk_t_ns(send, offsets, gaps), chunk_timing.to_us(times) * 1000)


def test_a_file_whose_version_and_columns_disagree_is_refused(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "rows.parquet"
    table = pa.table({"request_index": [0], "chunk_gap_us": pa.array([[5]], type=pa.list_(pa.int64()))})
    pq.write_table(table, path)
    with pytest.raises(ValueError, match="records no schema version 4"):
        read_request_table(path)
    pq.write_table(table.replace_schema_metadata({b"byog.schema_version": b"5"}), path)
    with pytest.raises(ValueError, match="newer than this byog reads"):
        read_request_table(path)
