"""Record what a server's time went on, into its server.json, as each stretch ends (time to verdict).

The runtime writes server.json at every (re)start; the pipeline adds an ``activity`` span after a
phase ends (a restart happens inside a measuring phase, before its span is added), and an
interleaved server's ``sleep_mode`` after each swap. Both are merged into the record on disk.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from byog.core.io import atomic_write_json, read_json
from byog.core.paths import RunDir
from byog.schemas.server import ActivityKind


def merge_into_server_record(rd: RunDir, server: str, update: dict[str, Any]) -> None:
    """Set top-level keys of a server.json that exists (a server that never started has none)."""
    path = rd.server_record(server)
    if path.is_file():
        atomic_write_json(path, {**read_json(path), **update})


def add_span(rd: RunDir, server: str, kind: ActivityKind, t0_unix_s: float, t1_unix_s: float) -> None:
    path = rd.server_record(server)
    if not path.is_file():
        return
    spans = list(read_json(path).get("activity") or [])
    spans.append({"kind": kind, "t0_unix_s": round(t0_unix_s, 3), "t1_unix_s": round(t1_unix_s, 3)})
    merge_into_server_record(rd, server, {"activity": spans})


@contextmanager
def spent(rd: RunDir, server: str, kind: ActivityKind) -> Iterator[None]:
    """Time the block and add it as a span of ``server``, also when it raises (an interrupted phase took its time)."""
    t0 = time.time()
    try:
        yield
    finally:
        add_span(rd, server, kind, t0, time.time())
