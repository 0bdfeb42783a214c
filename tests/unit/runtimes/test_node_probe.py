"""`python -m byog.runtimes.node_probe` prints the node's fingerprint as one JSON line, with the
CUDA_VISIBLE_DEVICES byog gave that node."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from byog.runtimes.node_probe import node_fingerprint


def test_the_probe_prints_one_json_line_of_this_node() -> None:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "2,3"}
    done = subprocess.run(
        [sys.executable, "-m", "byog.runtimes.node_probe"], env=env, capture_output=True, text=True, check=True
    )
    lines = done.stdout.splitlines()
    assert len(lines) == 1
    printed = json.loads(lines[0])
    assert printed["hostname"] == socket.gethostname()
    assert printed["cuda_visible_devices"] == "2,3"
    assert set(node_fingerprint()) == set(printed)  # the same fields in-process as on the node


def test_no_devices_given_is_recorded_as_null(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert node_fingerprint()["cuda_visible_devices"] is None
