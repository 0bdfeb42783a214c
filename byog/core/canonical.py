"""Canonical JSON (RFC 8785, via the ``rfc8785`` package): the bytes that are hashed and signed.

NaN and infinities have no JSON form; they are refused with the path of the offending value,
before the encoder sees them, so the message says where the bad number is.
"""

from __future__ import annotations

import math
from typing import Any

import rfc8785

from byog.core.errors import UsageError


def _refuse_non_finite(value: Any, path: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise UsageError(f"{path} is {value}: NaN and infinities are not JSON and cannot be signed")
    if isinstance(value, dict):
        for key, item in value.items():
            _refuse_non_finite(item, f"{path}.{key}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _refuse_non_finite(item, f"{path}[{index}]")


def canonical_json(value: Any, *, label: str = "value") -> bytes:
    _refuse_non_finite(value, label)
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as err:
        raise UsageError(f"{label} cannot be written as canonical JSON: {err}") from None
