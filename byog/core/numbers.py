"""Numbers as a reader (and Mermaid 11's xychart parser) takes them: plain decimals, never
e-notation. ``f"{13302:.4g}"`` is ``1.33e+04``, which xychart rejects and a reader must decode;
``decimal(13302)`` is ``13302`` and ``decimal(0.0000123)`` is ``0.0000123``.
"""

from __future__ import annotations

import math

MAX_PLACES = 12  # decimals of the smallest number written; below it a number reads as 0


def decimal(value: float, digits: int = 4) -> str:
    """``digits`` significant digits as a plain decimal: more digits for a number of more integer
    digits (13302, not 1.33e+04), never an exponent."""
    text = f"{value:.{digits}g}"
    if "e" not in text or not math.isfinite(value):
        return text
    if abs(value) >= 1:
        return f"{value:.0f}"
    places = min(digits - 1 - math.floor(math.log10(abs(value))), MAX_PLACES)
    return f"{value:.{places}f}".rstrip("0").rstrip(".")


def duration(seconds: float) -> str:
    """A span in the unit a reader takes in at a glance: '95.3 s', '42.0 min', '10.9 h'."""
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 120 * 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
