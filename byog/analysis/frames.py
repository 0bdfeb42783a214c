"""A run directory's records as pandas DataFrames: what ``byog.open`` and ``byog export`` hand over.

Built from the raw records, never from report.md: per-request rows from each point's parquet read
through ``read_request_columns`` with the per-request formulas of ``byog.analysis.metrics``; the
per-point, per-comparison and eval-verdict rows from the summary derived from those same files
(``summarize_bench``, ``summarize_evals``: the numbers verify recomputes); per-item scores and answers
from ``item_scores`` and ``item_answers`` (the pairing the verdict and ``byog items`` use); each
server's identity and launch from its server.json. Columns, units and dtypes are declared once in
``byog.analysis.frame_columns``. pandas is imported only here, inside the functions that build a
frame: ``import byog`` does not load it.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from byog.analysis import counters, frame_columns, metrics
from byog.analysis.bench_summary import summarize_bench
from byog.analysis.discordant import NO_ANSWERS, answers_text, is_gated, item_answers
from byog.analysis.eval_summary import item_scores, summarize_evals
from byog.analysis.request_columns import RequestColumns, read_request_columns
from byog.analysis.summary import plan_of
from byog.analysis.validity import load_point_record
from byog.core.errors import CheckFailed
from byog.core.io import read_json
from byog.core.paths import RunDir
from byog.core.safe_text import one_line, valid_utf8
from byog.schemas.bench import BenchPoint, BenchSummary, PointRecord, PointSummary
from byog.schemas.evals import EvalSummary
from byog.schemas.plan import Plan
from byog.schemas.server import ServerIdentity, ServerRecord

if TYPE_CHECKING:
    import pandas as pd

Row = dict[str, Any]


def frame(table: str, rows: Iterable[Row] | pd.DataFrame) -> pd.DataFrame:
    """A table's DataFrame: exactly its declared columns, in order, with their dtypes.

    ``rows``: dicts keyed by column name (a missing key is null), or a DataFrame of those columns.
    """
    import pandas as pd

    spec = frame_columns.TABLES[table]
    names = [c.name for c in spec]
    if isinstance(rows, pd.DataFrame):
        data = rows.reindex(columns=names)
    else:  # bundle text from JSON may hold lone surrogates, which no UTF-8 writer (arrow, CSV) takes
        data = pd.DataFrame([{k: _text(v) for k, v in row.items()} for row in rows], columns=names)
    try:
        typed: pd.DataFrame = data.astype({c.name: c.dtype for c in spec})
    except (OverflowError, TypeError, ValueError) as err:  # e.g. a server.json number past int64
        raise CheckFailed(f"the {table} table cannot hold a value of the run: {one_line(err, 200)}") from None
    return typed


def _text(value: Any) -> Any:
    return valid_utf8(value) if isinstance(value, str) else value


def _ints(values: np.ndarray, valid: np.ndarray) -> Any:
    """An Int64 column from int64 values and where they hold (no float round trip: ns exceed 2**53)."""
    import pandas as pd

    return pd.arrays.IntegerArray(np.asarray(values, dtype=np.int64), ~np.asarray(valid, dtype=bool))


def _scatter(mask: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Values computed for the requests at ``mask`` (in order) placed in a full-length column, NaN elsewhere."""
    out = np.full(mask.size, np.nan)
    out[mask] = values
    return out


@dataclass(frozen=True)
class _Point:
    server: str
    launch: int
    record: PointRecord
    rows: RequestColumns


class RunTables:
    """The tables of one run directory (a verified bundle's extraction, or a run's own folder).

    Each table is built on first use; the summary behind the per-point and verdict tables is derived
    once from the raw files.
    """

    def __init__(self, run_dir: RunDir, source: str) -> None:
        self.run_dir = run_dir
        self.source = source

    @cached_property
    def plan(self) -> Plan:
        return plan_of(self.run_dir)

    @cached_property
    def bench(self) -> BenchSummary:
        return summarize_bench(self.run_dir, self.plan)

    @cached_property
    def evals(self) -> EvalSummary:
        return summarize_evals(self.run_dir, self.plan)

    def role(self, server: str) -> str:
        return "baseline" if server in {b for _, b in self.plan.comparisons} else "candidate"

    @cached_property
    def _summaries(self) -> dict[tuple[str, int, str], PointSummary]:
        entries = [*self.bench.points, *self.bench.launch_points]
        return {(e.server, e.launch or 1, e.point_id): e for e in entries}

    def _launches(self) -> Iterable[tuple[str, int, RunDir]]:
        for server in self.plan.servers:
            for launch in range(1, self.plan.launches_of(server) + 1):
                yield server, launch, self.run_dir.for_launch(launch)

    def _points(self) -> Iterable[_Point]:
        """Every complete point of every server and launch (a rate search's probes included)."""
        for server, launch, launch_dir in self._launches():
            for point_id in launch_dir.bench_point_ids(server):
                record = load_point_record(launch_dir.bench_point(server, point_id))
                if record.status == "complete":
                    yield _Point(server, launch, record, read_request_columns(launch_dir.bench_rows(server, point_id)))

    def _head(self, server: str, launch: int, point: BenchPoint) -> Row:
        return {
            "source": self.source,
            "server": server,
            "role": self.role(server),
            "launch": launch,
            "point_id": point.point_id,
            "kind": point.kind,
            **_load(point),
        }

    # --- requests -------------------------------------------------------------------------------

    def requests(self) -> pd.DataFrame:
        import pandas as pd

        parts = [self._request_part(p) for p in self._points()]
        if not parts:
            return frame("requests", [])
        return frame("requests", pd.concat(parts, ignore_index=True))

    def _request_part(self, p: _Point) -> pd.DataFrame:
        import pandas as pd

        rows, point = p.rows, p.record.point
        n = len(rows)
        ok, has = rows.ok, rows.counts > 0
        summary = self._summaries.get((p.server, p.launch, point.point_id))
        start, end, tokens, chunks = _windows(rows) if point.kind == "batch" else _no_windows(n)
        in_window = start >= 0
        n_in_known = np.array([v is not None for v in rows.n_in], dtype=bool)
        n_in = np.array([0 if v is None else v for v in rows.n_in], dtype=np.int64)
        expected_in = np.asarray(rows.expected_n_in, dtype=np.int64)
        columns: dict[str, Any] = {name: [value] * n for name, value in self._head(p.server, p.launch, point).items()}
        columns |= {
            "request_index": rows.request_index,
            "wave": rows.wave,
            "warmup": rows.warmup,
            "interleave_seq": _ints(
                rows.interleave_seq if rows.interleave_seq is not None else np.zeros(n, dtype=np.int64),
                np.full(n, rows.interleave_seq is not None),
            ),
            "ok": ok,
            "error": rows.error,
            "n_in": _ints(n_in, n_in_known),
            "expected_n_in": expected_in,
            "n_out": rows.n_out,
            "n_out_is_osl": [None] * n if point.kind == "agentic" else (rows.n_out == point.osl).tolist(),
            "n_in_is_expected": (n_in_known & (n_in == expected_in)).tolist(),
            "usage_per_chunk": rows.usage_per_chunk,
            "point_valid": [summary.valid if summary else None] * n,
            "t_send_ns": rows.t_send_ns,
            "t_first_ns": _ints(rows.first_ns, has),
            "t_last_ns": _ints(rows.last_ns, has),
            "n_chunks": rows.counts,
            "ttft_s": _scatter(ok, metrics.ttft_s_columns(rows)),
            "tpot_s": _scatter(ok & (rows.n_out >= 2), metrics.tpot_s_columns(rows)),
            "e2e_latency_s": _scatter(ok, metrics.e2e_latency_s_columns(rows)),
            "decode_window_start_ns": _ints(start, in_window),
            "decode_window_end_ns": _ints(end, in_window),
            "decode_window_s": np.where(in_window, (end - start) / metrics.NS_PER_S, np.nan),
            "tokens_in_window": _ints(tokens, in_window),
            "chunks_in_window": _ints(chunks, in_window),
        }
        part: pd.DataFrame = pd.DataFrame(columns)
        return part

    # --- points and comparisons ---------------------------------------------------------------

    def points(self) -> pd.DataFrame:
        records: dict[tuple[str, int, str], PointRecord] = {}
        for server, launch, launch_dir in self._launches():
            for point_id in launch_dir.bench_point_ids(server):
                records[(server, launch, point_id)] = load_point_record(launch_dir.bench_point(server, point_id))
        rows = []
        for key, entry in self._summaries.items():
            rows.append(_point_row(self.source, self.role(entry.server), key[1], entry, records.get(key)))
        return frame("points", rows)

    def comparisons(self) -> pd.DataFrame:
        points = {(e.server, e.point_id): e for e in self.bench.points}
        rows = []
        for c in self.bench.comparisons:
            cand, base = points.get((c.candidate, c.point_id)), points.get((c.baseline, c.point_id))
            launches = c.launches or [1, 1]
            rows.append(
                {
                    "source": self.source,
                    "candidate": c.candidate,
                    "baseline": c.baseline,
                    "point_id": c.point_id,
                    "kind": cand.kind if cand else None,
                    **(_load(cand) if cand else {}),
                    "metric": c.metric,
                    "candidate_value": c.candidate_value,
                    "baseline_value": c.baseline_value,
                    "ratio": c.ratio,
                    "ci_low": c.ci_low,
                    "ci_high": c.ci_high,
                    "ci_level": c.ci_level,
                    "ci_method": CI_METHOD[c.units],
                    "resampled": c.units,
                    "ci_df": c.ci_df,
                    "ci_note": c.ci_note,
                    "within_noise": c.within_noise,
                    "candidate_launches": launches[0],
                    "baseline_launches": launches[1],
                    "ci90_low": c.ci90_low,
                    "ci90_high": c.ci90_high,
                    "margin_ln": c.margin,
                    "label": c.label,
                    "conditions": c.conditions,
                    "valid": bool(cand and base and cand.valid and base.valid),
                }
            )
        return frame("comparisons", rows)

    # --- evals ----------------------------------------------------------------------------------

    def _eval_pairs(self) -> list[tuple[str, str, str]]:
        """(task, candidate, baseline) of every verdict, once each (a verdict per speculative setting)."""
        return list(dict.fromkeys((v.task, v.candidate, v.baseline) for v in self.evals.verdicts))

    def items(self) -> pd.DataFrame:
        rows = []
        for task, candidate, baseline in self._eval_pairs():
            cand, base = item_scores(self.run_dir, candidate, task), item_scores(self.run_dir, baseline, task)
            gated = is_gated(self.run_dir, candidate, task) or is_gated(self.run_dir, baseline, task)
            # a gated task's answers and gold are never read (byog.analysis.discordant)
            cand_answers = {} if gated else item_answers(self.run_dir, candidate, task)
            base_answers = {} if gated else item_answers(self.run_dir, baseline, task)
            for key in sorted(set(cand) & set(base)):
                c_side, b_side = cand_answers.get(key, NO_ANSWERS), base_answers.get(key, NO_ANSWERS)
                rows.append(
                    {
                        "source": self.source,
                        "task": task,
                        "candidate": candidate,
                        "baseline": baseline,
                        "item_id": key[0],
                        "item_sha256": key[1],
                        "gated": gated,
                        "target": c_side.target,
                        "candidate_score": cand[key],
                        "baseline_score": base[key],
                        "flipped": cand[key] != base[key],
                        "lost": cand[key] < base[key],
                        "candidate_answers": _answers(c_side.answers),
                        "baseline_answers": _answers(b_side.answers),
                    }
                )
        return frame("items", rows)

    def verdicts(self) -> pd.DataFrame:
        rows = [
            {
                "source": self.source,
                **v.model_dump(include={c.name for c in frame_columns.VERDICTS}),
                "degenerate": "; ".join(v.degenerate) or None,
            }
            for v in self.evals.verdicts
        ]
        return frame("verdicts", rows)

    # --- servers --------------------------------------------------------------------------------

    def servers(self) -> pd.DataFrame:
        rows = []
        for server, launch, launch_dir in self._launches():
            path = launch_dir.server_record(server)
            if path.is_file():
                record = ServerRecord.model_validate(read_json(path))
                rows.append(_server_row(self.source, self.role(server), launch, record))
        return frame("servers", rows)


# which interval a comparison's CI is, from what its spread comes from (byog.analysis.bench_summary)
CI_METHOD = {
    "launches": "launch t interval",
    "ABBA blocks": "paired bootstrap",
    "waves": "bootstrap",
    "requests": "bootstrap",
}


def _load(point: BenchPoint | PointSummary) -> Row:
    return {
        "batch_size": point.batch_size,
        "concurrency": point.concurrency,
        "rate_req_s": point.rate,
        "isl": point.isl,
        "osl": point.osl,
    }


def _no_windows(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    none = np.full(n, -1, dtype=np.int64)
    return none, none.copy(), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)


def _windows(rows: RequestColumns) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per request: its wave's decode window (start, end; -1 where the wave has none) and its
    tokens and chunks inside it (``metrics.decode_window_ns_columns``, ``metrics.in_window_columns``)."""
    start, end, tokens, chunks = _no_windows(len(rows))
    for wave in np.unique(rows.wave).tolist():
        at = np.flatnonzero(rows.wave == wave)
        members = rows.take(at)
        window = metrics.decode_window_ns_columns(members)
        if window is None:
            continue
        start[at], end[at] = window
        tokens[at], chunks[at] = metrics.in_window_columns(members, window)
    return start, end, tokens, chunks


def _answers(answers: tuple[str | None, ...]) -> str | None:
    return answers_text(answers) if answers else None


def _point_row(source: str, role: str, launch: int, entry: PointSummary, record: PointRecord | None) -> Row:
    row: Row = {
        "source": source,
        "server": entry.server,
        "role": role,
        "launch": launch,
        "point_id": entry.point_id,
        "workload": entry.workload,
        "kind": entry.kind,
        **_load(entry),
        "api": entry.api,
        "prompts": entry.prompts,
        "status": record.status if record else None,
        "valid": entry.valid,
        "invalid_reasons": "; ".join(entry.invalid_reasons) or None,
        "n_requests": entry.n_requests,
    }
    if record is not None:
        row |= {"started_at": record.started_at, "duration_s": record.duration_s}
        if record.client is not None:
            row |= {"client_cpu_share": record.client.cpu_share, "client_loop_lag_p99_s": record.client.loop_lag_p99_s}
        measured = record.measured_counter_deltas is not None
        deltas = record.measured_counter_deltas if measured else record.counter_deltas
        row["counters_window"] = "measured" if measured else "point"
        for name in counters.COUNTERS:
            value = (deltas or {}).get(name)
            row[frame_columns.counter_column(name)] = value if isinstance(value, float | int) else None
    m = entry.metrics
    if m is not None:
        for name in ("ttft_s", "tpot_s", "itl_s", "e2e_latency_s", "tok_s_user"):
            for stat, value in getattr(m, name).model_dump().items():
                row[f"{name}_{stat}"] = value
        row |= m.model_dump(
            include={
                "output_tok_s",
                "decode_tok_s",
                "decode_window_s",
                "tokens_in_window",
                "decode_steps",
                "decode_step_s",
                "tokens_per_step",
                "acceptance_length",
                "draft_coverage",
                "tokens_per_request_step",
                "crosscheck_decode_tok_s",
                "crosscheck_ratio",
                "achieved_concurrency",
            }
        )
        if m.power is not None:
            power = m.power
            row |= {"energy_j": power.energy_j, "j_per_token": power.j_per_token, "mean_power_w": power.mean_power_w}
    return row


def _version(record: ServerRecord) -> str | None:
    identity = record.identity.vllm if record.identity else None
    if identity is not None and identity.version:
        return identity.version
    version = record.version
    if isinstance(version, dict):
        found = version.get("version")
        return found if isinstance(found, str) else None
    return version


def _model(record: ServerRecord) -> tuple[str | None, int | None]:
    """The first served model's id and max_model_len from /v1/models (None where it says nothing usable)."""
    models = record.models.get("data") if isinstance(record.models, dict) else None
    first = models[0] if isinstance(models, list) and models and isinstance(models[0], dict) else {}
    model_id, length = first.get("id"), first.get("max_model_len")
    return (model_id if isinstance(model_id, str) else None, length if isinstance(length, int) else None)


def _tokenizer_sha256(identity: ServerIdentity | None) -> str | None:
    """The tokenizer's digest: its own files', else the weights directory's it is part of."""
    files = identity and (identity.tokenizer or identity.weights)
    return files.tokenizer_sha256 if files else None


def _server_row(source: str, role: str, launch: int, record: ServerRecord) -> Row:
    identity = record.identity
    vllm = identity.vllm if identity else None
    model, max_len = _model(record)
    first = record.starts[0] if record.starts else {}
    ready = first.get("ready_after_s")
    started = first.get("started_at")
    return {
        "source": source,
        "server": record.name,
        "role": role,
        "launch": launch,
        "runtime": record.runtime,
        "argv": shlex.join(record.argv) if record.argv else None,
        "base_url": record.base_url,
        "tensor_parallel_size": record.tensor_parallel_size,
        "image": record.image,
        "image_id": record.image_id,
        "image_digests": " ".join(record.repo_digests or record.image_digests) or None,
        "vllm_version": _version(record),
        "vllm_distribution": vllm.distribution if vllm else None,
        "vllm_commit": vllm.commit if vllm else None,
        "vllm_wheel_sha256": vllm.wheel_sha256 if vllm else None,
        "weights_sha256": identity.weights.weights_sha256 if identity and identity.weights else None,
        "tokenizer_sha256": _tokenizer_sha256(identity),
        "model": model,
        "max_model_len": max_len,
        "launcher": record.launcher,
        "nodes": len(record.nodes) if record.nodes else 1,
        "starts": len(record.starts),
        "started_at": started if isinstance(started, str) else None,
        "ready_after_s": ready if isinstance(ready, float | int) else None,
    }
