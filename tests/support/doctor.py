"""Doctor a run directory the way a dishonest contributor would: make one server's decode faster in
its raw rows, re-derive summary.json and report.md, and re-sign. Verify cannot catch this (every
number recomputes from the doctored rows); a reproduction must."""

from __future__ import annotations

from pathlib import Path

from byog.analysis.bench_summary import wave_units
from byog.analysis.request_columns import read_request_columns
from byog.analysis.validity import load_point_record
from byog.analysis.wave_stopping import Rule, half_widths, seed_of
from byog.bundles.finalize import Packed, seal_and_pack
from byog.bundles.sign import SigningKey
from byog.core.io import atomic_write_json
from byog.core.paths import RunDir
from byog.pipeline.derive import derive_and_write
from byog.schemas.bench import read_request_rows, write_request_rows


def faster_decode(run_dir: RunDir, server: str, factor: float = 0.8) -> list[str]:
    """Every chunk after a request's first arrives ``factor`` times as late after it: TPOT and ITL
    shrink by ``factor`` (20% faster at 0.8), TTFT and token counts stay. The client's recorded
    event-loop lag shrinks with them, as a careful forger would have it: its limit is a share of
    the median ITL, so a doctored point stays exactly as valid as it was. Returns the points changed."""
    changed = []
    for point_id in run_dir.bench_point_ids(server):
        path = run_dir.bench_rows(server, point_id)
        rows = read_request_rows(path)
        for row in rows:
            if row.chunk_t_ns:
                first = row.chunk_t_ns[0]
                row.chunk_t_ns = [first + round((t - first) * factor) for t in row.chunk_t_ns]
        write_request_rows(path, rows)
        record = load_point_record(run_dir.bench_point(server, point_id))
        stopping = record.stopping
        if stopping is not None:  # the stopping record decided anew from the doctored waves, as verify will
            units = wave_units(record.point, read_request_columns(path))  # the rows as stored, read as verify reads
            rule = Rule(stopping.target, stopping.min_waves, stopping.max_waves)
            redecided = rule.record(half_widths(units, seed_of(record.point, server)))
            record = record.model_copy(update={"stopping": redecided})
            atomic_write_json(run_dir.bench_point(server, point_id), record.model_dump(mode="json"))
        if record.client is not None:
            lag = {
                k: v * factor
                for k in ("loop_lag_p99_s", "loop_lag_max_s")
                if (v := getattr(record.client, k)) is not None
            }
            record = record.model_copy(update={"client": record.client.model_copy(update=lag)})
            atomic_write_json(run_dir.bench_point(server, point_id), record.model_dump(mode="json"))
        changed.append(point_id)
    return changed


def doctored_bundle(
    run_dir: Path, out: Path, key: SigningKey, server: str = "candidate", factor: float = 0.8
) -> Packed:
    rd = RunDir(run_dir)
    faster_decode(rd, server, factor)
    derive_and_write(rd.root)
    return seal_and_pack(rd, out, key=key, plots=False)
