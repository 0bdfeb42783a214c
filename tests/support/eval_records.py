"""What an eval wrote, read back as the tests check it: results.json and its sequential record."""

from __future__ import annotations

import json
from typing import Any

from byog.core.paths import RunDir


def eval_results(rd: RunDir, server: str, task: str) -> dict[str, Any]:
    return dict(json.loads(rd.eval_results(server, task).read_text()))


def sequential_record(rd: RunDir, server: str, task: str) -> dict[str, Any]:
    """results.json ``extra.sequential``: the looks a server ran of a task with looks, and why it stopped."""
    return dict(eval_results(rd, server, task)["extra"]["sequential"])
