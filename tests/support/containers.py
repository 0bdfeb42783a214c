"""Waiting for a run's containers to be gone (the docker tests' check that nothing is left behind)."""

from __future__ import annotations

import time
from typing import Any


def wait_until_gone(client: Any, label_filter: str, timeout_s: float = 30.0) -> list[str]:
    """Names of containers still matching ``label_filter`` after waiting up to ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = [c.name for c in client.containers.list(all=True, filters={"label": label_filter})]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)
