"""Number, text and table formatting shared by report.md and the plots, and the raw files they read.

Fixed formats only (no clock, no locale, no byog version), so ``byog verify`` re-renders a
report byte for byte on another machine. Every string that comes from a bundle (plan and server
names, argv, env.json, claim names, reasons) goes through ``byog.core.safe_text``'s ``md_text``
or ``md_code``, once, where it enters the markdown: a bundle is someone else's input, and its text
must never become markdown (a heading, a link, an image, a mention, a fake "verified" badge) in
the report or in the PR comment made from it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from byog.core.numbers import decimal
from byog.core.paths import RunDir
from byog.schemas.server import ServerRecord

if TYPE_CHECKING:  # annotations only: `byog pr` formats its tables without loading numpy
    from byog.schemas.bench import PointComparison, PointSummary

M = TypeVar("M", bound=BaseModel)


# Report formats 1 to 4 wrote %g, e-notation included (1.33e+04); from format 5 every number is a plain
# decimal. ``render_report`` sets this for the format it renders, so an old bundle re-renders byte for byte.
_E_NOTATION: ContextVar[bool] = ContextVar("e_notation", default=False)
PLAIN_FROM = 5  # the first report format without e-notation

# From format 6 a table wider than GitHub's column is split into tables that fit, each keeping the
# first (key) column. Width is estimated from the text: GitHub draws tables at max-content width in
# its 880 px column (16 px body font: ~8 px a glyph on average; 2 x 13 px padding + 1 px border a cell).
_SPLIT_WIDE: ContextVar[bool] = ContextVar("split_wide", default=True)
SPLIT_FROM = 6
COLUMN_PX = 880
GLYPH_PX = 8.0
CELL_PX = 27.0
_MARKUP = re.compile(r"\]\([^)]*\)|[\\*`~\[\]]")  # link targets and markup GitHub does not draw as glyphs


@contextmanager
def number_style(report_format: int) -> Iterator[None]:
    """Numbers (and wide tables) as ``report_format`` wrote them, within the block."""
    token = _E_NOTATION.set(report_format < PLAIN_FROM)
    split = _SPLIT_WIDE.set(report_format >= SPLIT_FROM)
    try:
        yield
    finally:
        _SPLIT_WIDE.reset(split)
        _E_NOTATION.reset(token)


def num(value: Any, digits: int = 4) -> str:
    """Fixed significant digits: stable across machines whose floats differ in the last bits; a
    plain decimal (``byog.core.numbers.decimal``), unless an old report format is being rendered."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "–"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}g}" if _E_NOTATION.get() else decimal(value, digits)


def fixed(value: Any, places: int = 2) -> str:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "–"
    return f"{value:.{places}f}"


def scaled(value: Any, scale: float) -> Any:
    return value * scale if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def metric(point: PointSummary, path: str) -> Any:
    """A dotted metric of a point (``tpot_s.p50``), None where it was not measured."""
    value: Any = point.metrics
    for part in path.split("."):
        value = getattr(value, part, None)
    return value


def load_label(point: PointSummary) -> str:
    if point.speedup is not None:
        return f"x{point.speedup:g}"
    if point.batch_size is not None:
        return f"B={point.batch_size}"
    if point.concurrency is not None:
        return f"C={point.concurrency}"
    if point.rate is not None:
        return f"{point.rate:g} req/s"
    return "–"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table (no lines when there are no rows); cells may not break the table. Wider than
    GitHub's column (format 6 on): split into tables that fit, each with the first column again."""
    if not rows:
        return []
    clean = [[cell.replace("|", "\\|").replace("\n", " ") for cell in row] for row in [header, *rows]]
    groups = column_groups(clean) if _SPLIT_WIDE.get() else [list(range(len(clean[0])))]
    out: list[str] = []
    for group in groups:
        head, *body = [[row[i] for i in group] for row in clean]
        out += [
            "| " + " | ".join(head) + " |",
            "|" + "|".join("---" for _ in head) + "|",
            *("| " + " | ".join(r) + " |" for r in body),
            "",
        ]
    return out


def cell_px(cell: str) -> float:
    """The width GitHub gives a cell of this markdown (an estimate from its glyphs)."""
    return len(_MARKUP.sub("", cell)) * GLYPH_PX + CELL_PX


def column_groups(rows: list[list[str]]) -> list[list[int]]:
    """Column indices per table so that each fits COLUMN_PX: the key (the first column, and the second
    too where it is a narrow label: server and point), then columns in order until the next would not
    fit (a column too wide on its own gets a table with the key alone)."""
    widths = [max(cell_px(row[i]) for row in rows) for i in range(len(rows[0]))]
    if sum(widths) <= COLUMN_PX or len(widths) <= 2:
        return [list(range(len(widths)))]
    label = not any(_NUMBER_CELL.match(row[1].strip()) for row in rows[1:])
    key = [0, 1] if label and widths[0] + widths[1] <= 0.4 * COLUMN_PX else [0]
    groups: list[list[int]] = [list(key)]
    used = sum(widths[i] for i in key)
    for i in range(len(key), len(widths)):
        if used + widths[i] > COLUMN_PX and len(groups[-1]) > len(key):
            groups.append(list(key))
            used = sum(widths[k] for k in key)
        groups[-1].append(i)
        used += widths[i]
    return groups


_NUMBER_CELL = re.compile(r"^(?:~~)?[-+−±x×\[]?[0-9]")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in _CELL_SPLIT.split(line.strip())[1:-1]]


def align_numbers(lines: list[str]) -> list[str]:
    """Every table of ``table()`` with its number columns right-aligned (``---:``): a column whose
    cells are all numbers, intervals or "–" (at least one a number)."""
    out = list(lines)
    for i in range(1, len(out)):
        if not (out[i].startswith("|---") and out[i - 1].startswith("| ")):
            continue
        body = []
        for line in out[i + 1 :]:
            if not line.startswith("| "):
                break
            body.append(_cells(line))
        width = len(_cells(out[i - 1]))
        marks = []
        for column in range(width):
            values = [row[column] for row in body if column < len(row) and row[column] not in ("–", "")]
            numeric = bool(values) and all(_NUMBER_CELL.match(v) for v in values)
            marks.append("---:" if numeric else "---")
        out[i] = "|" + "|".join(marks) + "|"
    return out


def read_json_or_empty(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_record(path: Path, model: type[M]) -> M | None:
    """The record a JSON file holds; None when it is missing, unreadable or not of the model's shape."""
    data = read_json_or_empty(path)
    if not data:
        return None
    try:
        return model.model_validate(data)
    except ValidationError:
        return None


def server_records(run_dir: RunDir) -> list[ServerRecord]:
    """Every servers/<name>/server.json, named by its folder (a record that does not validate: the name only)."""
    base = run_dir.root / "servers"
    if not base.is_dir():
        return []
    records = []
    for p in sorted(base.iterdir()):
        if (p / "server.json").is_file():
            try:
                records.append(ServerRecord.model_validate(read_json_or_empty(p / "server.json") | {"name": p.name}))
            except ValidationError:
                records.append(ServerRecord(name=p.name))
    return records


def plain(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return str(value)


# --- A/B numbers as the report shows them ------------------------------------------------------

# metric -> (label, scale for display, True when higher is better); the order of the report's matrices
METRICS: dict[str, tuple[str, float, bool]] = {
    "decode_tok_s": ("decode tok/s", 1.0, True),
    "tpot_s.p50": ("TPOT P50 (ms)", 1e3, False),
    "ttft_s.p50": ("TTFT P50 (ms)", 1e3, False),
}


def speedup(c: PointComparison) -> tuple[float | None, float | None, float | None]:
    """(speed-up, CI low, CI high), oriented so > 1 means the candidate is better.

    For a rate (higher is better) that is candidate / baseline; for a time it is baseline /
    candidate, and the CI's ends swap.
    """
    higher_better = METRICS.get(c.metric, (c.metric, 1.0, True))[2]
    if higher_better:
        return c.ratio, c.ci_low, c.ci_high
    return _inverse(c.ratio), _inverse(c.ci_high), _inverse(c.ci_low)


def _inverse(x: float | None) -> float | None:
    return 1 / x if x else None


INVALID = "⚠ invalid"  # the mark has its word: fonts without the glyph and screen readers still say it
INVALID_V2 = "⚠"  # report format 2's mark


def struck(text: str, mark: str = INVALID) -> str:
    """A number that is not a result (its point is invalid): struck through and marked, in report.md
    and in byog's console tables (printed as markdown off a terminal) alike."""
    return f"~~{text}~~ {mark}"


def unstruck(cell: str) -> tuple[str, str] | None:
    """``struck``'s number and mark, or None for a cell it did not write."""
    found = re.fullmatch(r"~~(.+?)~~ (.+)", cell, flags=re.S)
    return (found.group(1), found.group(2)) if found else None


def times(value: float | None) -> str:
    return f"{fixed(value)}×" if value is not None else "–"


def ci(low: float | None, high: float | None) -> str:
    return f"[{fixed(low)}, {fixed(high)}]" if low is not None and high is not None else "[no CI]"


def isl_label(isl: int) -> str:
    """An input length as a reader says it: 8192 -> "8k", 1536 -> "1.5k", 128 -> "128"."""
    return f"{isl / 1024:g}k" if isl >= 1024 and isl % 512 == 0 else str(isl)


def point_label(point: PointSummary) -> str:
    """Where a point is: its load and input length, "B=1, ISL 8k"."""
    return f"{load_label(point)}, ISL {isl_label(point.isl)}"


def speedup_axis(values: Iterable[float | None]) -> tuple[float, float]:
    """The value axis of a speed-up chart (Mermaid and PNG alike): around the data (speed-ups and
    their CI ends) and 1.0, so 1.24× against 1.26× is a visible step and no effect is the line at 1;
    padded by a tenth of the span (at least 0.02) and rounded out to 0.01."""
    shown = [v for v in values if v is not None and math.isfinite(v)] + [1.0]
    low, high = min(shown), max(shown)
    pad = max(0.1 * (high - low), 0.02)
    return max(0.0, math.floor((low - pad) * 100) / 100), math.ceil((high + pad) * 100) / 100
