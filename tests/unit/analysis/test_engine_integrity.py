"""Engine integrity as a verdict: clean, patched, patched under a waiver, unknown; rank 0 and every node."""

from __future__ import annotations

from typing import Any

from byog.analysis.engine_integrity import verdict, verdicts
from byog.schemas.server import ServerIdentity, ServerRecord

SHA = "c" * 64
SETUPTOOLS_PTH = {
    "kind": "pth",
    "path": "/venv/site/distutils-precedence.pth",
    "sha256": "d" * 64,
    "owner": "setuptools",
}


def ident(**integrity: Any) -> ServerIdentity:
    vllm = {"distribution": "vllm", "version": "0.24.0", "integrity": {"files_checked": 3307, **integrity}}
    return ServerIdentity.model_validate({"vllm": vllm})


def test_clean_names_the_build_and_the_owned_hooks() -> None:
    found = verdict("candidate", ident(status="clean", hooks=[SETUPTOOLS_PTH]), {})
    assert found.status == "clean"
    assert found.line == (
        "candidate: clean (vllm 0.24.0: 3307 files match RECORD; 1 start-up hook(s) installed by their distributions)"
    )


def test_patched_names_each_finding_and_a_waiver_needs_the_exact_digest() -> None:
    patched = ident(
        status="patched",
        modified={"vllm/attention/layer.py": SHA},
        modified_count=1,
        hooks=[SETUPTOOLS_PTH, {"kind": "ld_preload", "path": "/opt/libhook.so"}],
    )
    found = verdict("candidate", patched, {})
    assert found.status == "patched"
    assert found.line == "candidate: patched: modified vllm/attention/layer.py; ld_preload /opt/libhook.so"
    # a hook recorded without a digest cannot be waived: still patched
    assert verdict("candidate", patched, {"vllm/attention/layer.py": SHA}).status == "patched"
    only_file = ident(status="patched", modified={"vllm/attention/layer.py": SHA}, modified_count=1)
    waived = verdict("candidate", only_file, {"vllm/attention/layer.py": SHA})
    assert (waived.status, waived.line) == (
        "waived",
        "candidate: patched: waiver vllm/attention/layer.py (sha256 cccccccccccc)",
    )
    assert verdict("candidate", only_file, {"vllm/attention/layer.py": "e" * 64}).status == "patched"


def test_unknown_is_never_clean() -> None:
    assert (
        verdict("c", ident(status="unknown", reason="an editable install"), {}).line
        == "c: unknown: an editable install"
    )
    assert verdict("c", ServerIdentity.model_validate({"vllm": {"version": "0.1"}}), {}).status == "unknown"
    assert verdict("c", None, {}).line == "c: unknown: no engine integrity recorded"
    # "patched" that names nothing is a record byog did not write: unknown, not clean
    assert verdict("c", ident(status="patched"), {}).status == "unknown"


def test_every_node_has_its_own_verdict() -> None:
    record = ServerRecord.model_validate(
        {
            "name": "candidate",
            "identity": {"vllm": {"integrity": {"status": "clean"}}},
            "nodes": [
                {"rank": 0, "identity": {"vllm": {"integrity": {"status": "clean"}}}},
                {
                    "rank": 1,
                    "identity": {
                        "vllm": {"integrity": {"status": "patched", "missing": {"names": ["vllm/x.py"], "count": 1}}}
                    },
                },
            ],
        }
    )
    found = verdicts("candidate", record, {})
    assert [(v.where, v.status) for v in found] == [
        ("candidate", "clean"),
        ("candidate node 0", "clean"),
        ("candidate node 1", "patched"),
    ]
