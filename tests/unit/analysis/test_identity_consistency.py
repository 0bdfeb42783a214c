"""Where a server's identity names one fact twice, the two agree; each finding names both sources."""

from __future__ import annotations

from typing import Any

from byog.analysis.identity_consistency import contradictions
from byog.schemas.server import ImageIdentity, ServerRecord

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"


def record(vllm: dict[str, Any], **more: Any) -> ServerRecord:
    base = {"version": "0.32.0", "commit": COMMIT, "commit_source": "vllm/_version.py"}
    return ServerRecord.model_validate({"name": "cand", "identity": {"vllm": {**base, **vllm}}, **more})


def test_a_consistent_identity_has_nothing_to_say() -> None:
    assert contradictions("cand", record({"version": f"0.32.1.dev3+g{COMMIT[:9]}"})) == []
    assert contradictions("cand", record({"commit": None, "commit_source": None})) == []


def test_commit_and_source_must_go_together_and_the_source_be_known() -> None:
    assert contradictions("cand", record({"commit_source": None})) == [
        f"server 'cand' records commit {COMMIT} but no source that named it"
    ]
    assert contradictions("cand", record({"commit": None})) == [
        "server 'cand' names commit source 'vllm/_version.py' but no commit"
    ]
    assert "none of" in contradictions("cand", record({"commit_source": "trust me"}))[0]
    assert "names none" in contradictions("cand", record({"commit_source": "local version"}))[0]


def test_the_version_local_commit_and_the_recorded_commit_must_agree() -> None:
    found = contradictions("cand", record({"version": "0.32.1+gfedcba98"}))
    assert found == [
        f"server 'cand' records commit {COMMIT} (vllm/_version.py) but its version 0.32.1+gfedcba98 names gfedcba98"
    ]


def test_the_wheel_and_its_image_labels_must_agree() -> None:
    rec = record({"wheel_sha256": "a" * 64})
    assert rec.identity is not None
    rec.identity.image = ImageIdentity(labels={"byog.vllm-wheel.sha256": "b" * 64, "byog.vllm-wheel.commit": OTHER})
    found = contradictions("cand", rec)
    assert [f.split(" is not")[0].split(", the")[0] for f in found] == [
        f"server 'cand': the installed wheel's sha256 {'a' * 64}",
        f"server 'cand': the installed vLLM records commit {COMMIT}",
    ]
    assert "b" * 64 in found[0] and OTHER in found[1]


def test_every_node_agrees_with_rank_0() -> None:
    ident = {"vllm": {"version": "0.32.0", "commit": COMMIT, "commit_source": "vllm/_version.py"}}
    other = {"vllm": {"version": "0.32.0", "commit": OTHER, "commit_source": "vllm/_version.py"}}
    rec = record({}, nodes=[{"rank": 0, "identity": ident}, {"rank": 1, "identity": other}, {"rank": 2}])
    assert contradictions("cand", rec) == [
        f"server 'cand' node 1 ran commit {OTHER} while rank 0 ran {COMMIT}",
        "server 'cand' node 2 records no vLLM identity while rank 0 does",
    ]
