"""The schema check holds a rows file against the row model of its own layout: a bundle whose rows are
in the layout of bench_row schemas 1-3 (int64 nanoseconds, no recorded version) still verifies, and
one whose rows claim a schema version this byog does not know fails in one sentence. The same for
eval items: an items.parquet of item schema 1 (no recorded version, no raw output columns) still
verifies and its report renders; one of layout 1 that carries a raw output column is refused."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from byog.analysis.summary import derive_summary
from byog.bundles.finalize import seal_and_pack
from byog.bundles.sign import SigningKey
from byog.bundles.verify import verify_bundle
from byog.core.io import atomic_write_json
from byog.core.paths import RunDir
from byog.schemas import tables
from byog.schemas.bench import RequestRow, read_request_rows
from byog.schemas.evals import EvalItemRowV1, EvalItemRowV2
from tests.support.bundles_kit import build_bundle
from tests.support.keys import allowed_signers, make_key


def _rows_files(run_dir: RunDir) -> list[Path]:
    return sorted((run_dir.root / "bench").glob("*/*.parquet"))


def _signed(folder: Path) -> tuple[RunDir, Path, Path]:
    key, public = make_key(folder, "alice")
    allowed = allowed_signers(folder / "allowed_signers", [("alice@example.com", public)])
    run_dir, packed = build_bundle(folder, key)
    return run_dir, packed.bundle, allowed


def test_a_bundle_of_schema_3_rows_still_verifies(tmp_path: Path) -> None:
    run_dir, _, allowed = _signed(tmp_path)
    key_path = tmp_path / "alice"
    for path in _rows_files(run_dir):
        rows = read_request_rows(path)
        tables.write_rows(path, RequestRow, rows, compression="zstd")  # as byog wrote them before schema 4
        assert b"byog.schema_version" not in (pq.read_schema(path).metadata or {})
    atomic_write_json(run_dir.summary_json, derive_summary(run_dir).to_json())
    packed = seal_and_pack(run_dir, tmp_path / "old.tar.gz", key=SigningKey(key_path, "test"))
    report = verify_bundle(packed.bundle, allowed_signers=allowed)
    assert report.verified, report.failures


def test_rows_of_an_unknown_schema_version_fail_the_schema_check(tmp_path: Path) -> None:
    run_dir, _, allowed = _signed(tmp_path)
    path = _rows_files(run_dir)[0]
    table = pq.read_table(path)
    pq.write_table(table.replace_schema_metadata({b"byog.schema_version": b"9"}), path)
    packed = seal_and_pack(run_dir, tmp_path / "future.tar.gz", key=SigningKey(tmp_path / "alice", "test"))
    report = verify_bundle(packed.bundle, allowed_signers=allowed)
    failed = {r.name: r.message for r in report.results if r.status == "fail"}
    assert "schema_version 9 is newer than this byog reads (4)" in failed["schemas"]


def _items_files(run_dir: RunDir) -> list[Path]:
    return sorted((run_dir.root / "evals").glob("*/*/items.parquet"))


def _as_item_schema_1(path: Path, extra: dict[str, str | None] | None = None) -> None:
    """The file as byog wrote it before item schema 2 (``extra``: columns added to it), [invalid] answers in it."""
    rows = [
        {k: v for k, v in row.items() if k in EvalItemRowV1.model_fields} | {"extracted_answer": "[invalid]"}
        for row in pq.read_table(path).to_pylist()
    ]
    rows = [row | (extra or {}) for row in rows]
    pq.write_table(pa.Table.from_pylist(rows), path, compression="zstd")
    assert b"byog.schema_version" not in (pq.read_schema(path).metadata or {})


def test_a_bundle_of_item_schema_1_still_verifies_and_renders(tmp_path: Path) -> None:
    run_dir, _, allowed = _signed(tmp_path)
    assert _items_files(run_dir)
    for path in _items_files(run_dir):
        assert pq.read_schema(path).metadata[b"byog.schema_version"] == b"3"  # what byog writes now
        _as_item_schema_1(path)
    atomic_write_json(run_dir.summary_json, derive_summary(run_dir).to_json())
    packed = seal_and_pack(run_dir, tmp_path / "old.tar.gz", key=SigningKey(tmp_path / "alice", "test"))
    report = verify_bundle(packed.bundle, allowed_signers=allowed)
    assert report.verified, report.failures
    assert "could not read" not in run_dir.report_md.read_text(encoding="utf-8")  # no raw outputs to explain


def test_item_schema_1_with_a_raw_output_column_fails_the_schema_check(tmp_path: Path) -> None:
    run_dir, _, allowed = _signed(tmp_path)
    _as_item_schema_1(_items_files(run_dir)[0], {"raw_output": "<script>"})
    packed = seal_and_pack(run_dir, tmp_path / "forged.tar.gz", key=SigningKey(tmp_path / "alice", "test"))
    report = verify_bundle(packed.bundle, allowed_signers=allowed)
    failed = {r.name: r.message for r in report.results if r.status == "fail"}
    assert "has columns the eval_item schema does not know: raw_output" in failed["schemas"]


def _as_item_schema_2(path: Path, extra: dict[str, int] | None = None) -> None:
    """The file as byog wrote it before item schema 3 (no ``num_concurrent``; ``extra``: columns added)."""
    fields = EvalItemRowV2.model_fields
    rows = [{k: v for k, v in row.items() if k in fields} for row in pq.read_table(path).to_pylist()]
    table = pa.Table.from_pylist([row | (extra or {}) for row in rows])
    pq.write_table(table.replace_schema_metadata({b"byog.schema_version": b"2"}), path, compression="zstd")


def test_a_bundle_of_item_schema_2_still_verifies(tmp_path: Path) -> None:
    run_dir, _, allowed = _signed(tmp_path)
    for path in _items_files(run_dir):
        assert "num_concurrent" in pq.read_schema(path).names
        _as_item_schema_2(path)
    atomic_write_json(run_dir.summary_json, derive_summary(run_dir).to_json())
    packed = seal_and_pack(run_dir, tmp_path / "old.tar.gz", key=SigningKey(tmp_path / "alice", "test"))
    report = verify_bundle(packed.bundle, allowed_signers=allowed)
    assert report.verified, report.failures


def test_item_schema_2_with_a_num_concurrent_column_fails_the_schema_check(tmp_path: Path) -> None:
    run_dir, _, allowed = _signed(tmp_path)
    _as_item_schema_2(_items_files(run_dir)[0], {"num_concurrent": 64})
    packed = seal_and_pack(run_dir, tmp_path / "forged.tar.gz", key=SigningKey(tmp_path / "alice", "test"))
    report = verify_bundle(packed.bundle, allowed_signers=allowed)
    failed = {r.name: r.message for r in report.results if r.status == "fail"}
    assert "has columns the eval_item schema does not know: num_concurrent" in failed["schemas"]
