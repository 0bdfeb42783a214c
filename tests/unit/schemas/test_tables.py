"""Arrow arrays built from numpy buffers, and a point's rows read without pandas (verify's start-up)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from byog.schemas.bench import read_request_table
from byog.schemas.tables import list_array, list_column
from tests.support.synthetic import SyntheticSpec, make_run_dir

REPO = Path(__file__).resolve().parents[3]


def test_list_array_is_list_columns_inverse() -> None:
    offsets = np.array([0, 2, 2, 5], dtype=np.int64)
    values = np.array([7, -1, 2**40, 0, 3, 99], dtype=np.int64)[:5]
    array = list_array(offsets, values)
    assert array.type == pa.list_(pa.int64())
    assert array.to_pylist() == [[7, -1], [], [2**40, 0, 3]]
    back_offsets, back_values = list_column(pa.table({"x": array}), "x")
    assert back_offsets.tolist() == offsets.tolist() and back_values.tolist() == values.tolist()
    strided = list_array(np.array([0, 9, 2, 9])[::2], np.array([4, 0, 5])[::2])  # views are copied, not over-read
    assert strided.to_pylist() == [[4, 5]]
    assert list_array(np.array([0]), np.array([], dtype=np.int64)).to_pylist() == []


def test_list_array_refuses_an_offset_past_int32() -> None:
    with pytest.raises(ValueError, match="does not fit int32"):
        list_array(np.array([0, 2**31], dtype=np.int64), np.zeros(0, dtype=np.int64))


def test_a_points_rows_read_without_importing_pandas_or_arrows_compute(tmp_path: Path) -> None:
    """pyarrow's ``pa.array`` imports pandas (0.4 s of every verify) to ask whether its input is a pandas
    object, and a ``cast`` imports pyarrow.compute (0.1 s)."""
    run_dir = make_run_dir(tmp_path / "run", SyntheticSpec(batch_sizes=(1,), waves=1))
    rows_file = next((run_dir.root / "bench").glob("*/*.parquet"))
    table = read_request_table(rows_file)
    assert table.num_rows and len(table.column("chunk_t_ns").combine_chunks().flatten()) > 0
    probe = (
        "import sys\nfrom pathlib import Path\nfrom byog.schemas.bench import read_request_table\n"
        f"table = read_request_table(Path({str(rows_file)!r}))\n"
        "print(table.num_rows, 'pandas' in sys.modules, 'pyarrow.compute' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.split() == [str(table.num_rows), "False", "False"]
