"""The two kinds of record: raw ones as written, and derived ones that must be valid JSON.

``Strict``: every record refuses unknown keys, so a misspelt key is an error that names it.
Validators are built on first use (``defer_build``): importing byog stays fast for commands
that never validate a record.
``Derived``: numbers computed from raw records (summary.json). JSON has no NaN or infinity, so a
non-finite float becomes None (null) on the way in, also on assignment. Fields a class lists in
``omit_when_empty`` are left out of the dump while None, False or empty: a field added later (launches,
A/A margins) then leaves the bytes of a summary that has nothing to put in it as they were.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, field_validator, model_serializer


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


def finite_or_none(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [finite_or_none(v) for v in value]
    return value


class Derived(Strict):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, defer_build=True)
    omit_when_empty: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _omit_empty(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if self.omit_when_empty and isinstance(data, dict):
            for key in self.omit_when_empty:
                if key in data and (data[key] is None or data[key] is False or data[key] in ([], {})):
                    del data[key]
        return data

    @field_validator("*", mode="before")
    @classmethod
    def _json_numbers(cls, value: Any) -> Any:
        return finite_or_none(value)
