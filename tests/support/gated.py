"""Gated data must never appear in plain text in a run directory, a bundle or a report.

GPQA's authors ask that its questions never be posted in plain text. byog keeps only item ids,
hashes, extracted choice letters and scores of gated items (``lm_eval_adapter`` drops prompts
and responses). ``find_texts`` is the check: it scans every file under a folder (parquet decoded
too) for given strings; tests run it with the GPQA fixture's texts.
"""

from __future__ import annotations

import contextlib
import csv
import json
from collections.abc import Iterable
from pathlib import Path

from byog.evals.data import FIXTURES_DIR

GATED_TEXT_COLUMNS = (
    "Question",
    "Correct Answer",
    "Incorrect Answer 1",
    "Incorrect Answer 2",
    "Incorrect Answer 3",
    "Explanation",
)


def gpqa_fixture_texts(min_chars: int = 5) -> list[str]:
    """The GPQA fixture's question, choice and explanation texts (short ones like "8" would match anything)."""
    with (FIXTURES_DIR / "gpqa_diamond.FIXTURE.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    texts = {row[column].strip() for row in rows for column in GATED_TEXT_COLUMNS}
    return sorted(t for t in texts if len(t) >= min_chars)


def _readable(path: Path) -> str:
    text = path.read_bytes().decode("utf-8", errors="ignore")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        text += json.dumps(pq.read_table(path).to_pylist(), ensure_ascii=False, default=str)
    elif path.suffix == ".gz":
        import gzip

        with contextlib.suppress(OSError):
            text += gzip.decompress(path.read_bytes()).decode("utf-8", errors="ignore")
    return text


def find_texts(root: Path, texts: Iterable[str]) -> list[tuple[str, str]]:
    """(file relative to root, text) for every text found in any file under root."""
    needles = [t for t in texts if t]
    found: list[tuple[str, str]] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        blob = _readable(path)
        found.extend((str(path.relative_to(root)), t) for t in needles if t in blob)
    return found
