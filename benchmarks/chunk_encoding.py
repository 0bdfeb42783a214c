"""Bytes per output chunk of the per-token timing, stored every way considered, on the committed H200
rows (every bench parquet under benchmarks/results/h200*/ with >= 2,000 chunks).

    nice python benchmarks/chunk_encoding.py [--save]   # measure (seconds), --save: write the figures
    python benchmarks/chunk_encoding.py --reprint         # the committed figures (CI re-prints them)

"column" rows: the timing column alone, written as a one-column parquet file; "file" rows: the
whole rows file as byog writes it (schema <= 3: ``chunk_t_ns``; schema 4: ``chunk_gap_us``,
``byog.schemas.chunk_timing``) and after pack's over-budget re-encoding (zstd level 19).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "chunk-encoding.json"
MIN_CHUNKS = 2000


def _size(table: Any, **options: Any) -> int:
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(table, sink, **options)
    return len(sink.getvalue())


def measure() -> dict[str, Any]:
    import pyarrow as pa

    from byog.analysis.request_columns import read_request_columns
    from byog.schemas import chunk_timing
    from byog.schemas.bench import read_request_rows, write_request_rows
    from byog.schemas.tables import recompress

    files = sorted(REPO.glob("benchmarks/results/h200*/**/bench/*/*.parquet"))
    sizes: dict[str, int] = {}
    chunks = used = 0

    def add(label: str, size: int) -> None:
        sizes[label] = sizes.get(label, 0) + size

    with tempfile.TemporaryDirectory() as folder:
        for path in files:
            columns = read_request_columns(path)
            if columns.chunk_t_ns.size < MIN_CHUNKS:
                continue
            used += 1
            chunks += columns.chunk_t_ns.size
            offsets = pa.array(columns.offsets.astype(np.int32))
            ns = pa.ListArray.from_arrays(offsets, pa.array(columns.chunk_t_ns))
            gaps = chunk_timing.gaps_us(columns.t_send_ns, columns.offsets, columns.chunk_t_ns)
            leaf = {"c.list.element": None}
            add("column: ns int64, snappy (schema <= 3)", _size(pa.table({"c": ns}), compression="snappy"))
            add("column: ns int64, zstd 19", _size(pa.table({"c": ns}), compression="zstd", compression_level=19))
            for width in ("int32", "int64"):
                gap = pa.table({"c": pa.ListArray.from_arrays(offsets, pa.array(gaps, type=getattr(pa, width)()))})
                add(f"column: µs gaps {width}, plain + zstd", _size(gap, compression="zstd"))
                for encoding in ("DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT"):
                    options = {"use_dictionary": False, "column_encoding": dict.fromkeys(leaf, encoding)}
                    add(f"column: µs gaps {width}, {encoding} + zstd", _size(gap, compression="zstd", **options))
                    add(
                        f"column: µs gaps {width}, {encoding} + zstd 19",
                        _size(gap, compression="zstd", compression_level=19, **options),
                    )
            add("file: schema <= 3 as written", path.stat().st_size)
            add("file: schema <= 3, zstd 19 (pack over budget)", len(recompress(path.read_bytes(), level=19)))
            out = Path(folder) / "rows.parquet"
            write_request_rows(out, read_request_rows(path))
            add("file: schema 4 as written", out.stat().st_size)
            add("file: schema 4, zstd 19 (pack over budget)", len(recompress(out.read_bytes(), level=19)))
    return {"files": used, "chunks": chunks, "bytes": sizes}


def render(result: dict[str, Any]) -> str:
    lines = [
        f"{result['files']} committed H200 rows files with >= {MIN_CHUNKS:,} chunks: {result['chunks']:,} chunks",
        "",
        "| stored as | bytes | bytes / chunk |",
        "|---|---|---|",
    ]
    for label, size in result["bytes"].items():
        lines.append(f"| {label} | {size:,} | {size / result['chunks']:.3f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--save", action="store_true", help=f"write the figures to {RESULTS.relative_to(REPO)}")
    parser.add_argument("--reprint", action="store_true", help="print the committed figures")
    args = parser.parse_args()
    if args.reprint:
        print(render(json.loads(RESULTS.read_text())))
        return
    result = measure()
    print(render(result))
    if args.save:
        RESULTS.write_text(json.dumps({"command": " ".join(["python", *sys.argv]), **result}, indent=1) + "\n")


if __name__ == "__main__":
    main()
