"""``byog plan``'s start-up estimate: weights / load rate + compile + capture + rest (a run's vLLM log, or defaults)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from byog.pipeline.startup_estimate import (
    _COMPILE,
    COMPILE_GUESS_S,
    GIB,
    GRAPH_CAPTURE_GUESS_S,
    OTHER_GUESS_S,
    STORAGE_RATE_GB_S,
    WARM_COMPILE_SHARE,
    measured_relaunches,
    measured_starts,
    startup_parts,
)
from byog.plans.load import parse_plan

GPU_RUN = Path(__file__).parents[3] / "benchmarks/results/numerics/h200-numerics-smollm2"


def _plan(model: Path, args: str = "[]") -> object:
    return parse_plan(
        f"""
name: t
model: {{path: "{model}"}}
servers: {{stock: {{args: {args}}}, cand: {{}}}}
baseline: stock
""",
        "t.yaml",
    )


def test_the_default_is_weights_over_the_storage_rate_plus_stated_guesses(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 2_000_000)
    plan = _plan(tmp_path)
    parts = startup_parts(plan, plan.servers["cand"], "cand", {})  # type: ignore[attr-defined]
    rate = STORAGE_RATE_GB_S["local disk"] * 1e9 / GIB
    assert parts["load_s"] == pytest.approx(2_000_000 / GIB / rate)
    assert parts["total_s"] == pytest.approx(parts["load_s"] + COMPILE_GUESS_S + GRAPH_CAPTURE_GUESS_S + OTHER_GUESS_S)
    eager = _plan(tmp_path, "[--enforce-eager]")
    assert startup_parts(eager, eager.servers["stock"], "stock", {})["compile_s"] == 0.0  # type: ignore[attr-defined]


def test_a_run_on_the_h200_gives_its_measured_rate_and_parts(tmp_path: Path) -> None:
    """The committed H200 run's own vLLM log lines: "Model loading took 0.26 GiB and 1.68 s", compile 19.99 s."""
    shutil.copytree(GPU_RUN / "servers", tmp_path / "servers")
    measured = measured_starts(tmp_path)
    control = measured["stock.control"]
    assert control["rate_gib_s"] == pytest.approx(0.26 / 1.683269)
    assert (control["compile_s"], control["graph_capture_s"]) == (19.99, 5.0)
    plan = _plan(tmp_path)
    parts = startup_parts(plan, plan.servers["stock"], "stock.control", measured)  # type: ignore[attr-defined]
    assert parts["source"].startswith("--from-run (this server)")
    assert parts["compile_s"] == 19.99 and parts["other_s"] > 0


RELAUNCH_LOG = Path(__file__).parents[3] / "benchmarks/results/numerics/h200-numerics-moe/servers/graphs/server.log"


def test_a_relaunch_with_the_compile_cache_kept_is_charged_the_measured_warm_compile(tmp_path: Path) -> None:
    """A local server's relaunch finds vLLM's compile cache: the compile costs the share that the committed
    log of one server started twice measured (cold, then from the cache); the rest is the first start's."""
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 2_000_000)
    plan = _plan(tmp_path)
    parts = startup_parts(plan, plan.servers["cand"], "cand", {})  # type: ignore[attr-defined]
    assert parts["restart_s"] == pytest.approx(parts["total_s"] - COMPILE_GUESS_S * (1 - WARM_COMPILE_SHARE))
    assert parts["restart_s"] < parts["total_s"]
    cold, warm = (float(x) for x in _COMPILE.findall(RELAUNCH_LOG.read_text(encoding="utf-8")))
    assert warm / cold == pytest.approx(WARM_COMPILE_SHARE)  # the constant is that log's, as its source says
    assert "from the cache" in RELAUNCH_LOG.read_text(encoding="utf-8")
    said = parts["restart_source"]
    assert str(RELAUNCH_LOG.relative_to(RELAUNCH_LOG.parents[4])) in said and "0.24 of the cold compile" in said
    assert "page cache across launches: unknown" in said  # what byog cannot know is said, and charged cold


def test_a_relaunch_in_a_fresh_container_or_without_a_cache_is_a_first_start(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 2_000_000)
    plan = parse_plan(
        f"""
name: t
model: {{path: "{tmp_path}"}}
servers:
  stock: {{runtime: docker, image: "byog-eval@sha256:{"0" * 64}"}}
  cand: {{env: {{VLLM_DISABLE_COMPILE_CACHE: "1"}}}}
  eager: {{args: [--enforce-eager]}}
baseline: stock
""",
        "t.yaml",
    )
    for name, why in (
        ("stock", "fresh container"),
        ("cand", "VLLM_DISABLE_COMPILE_CACHE"),
        ("eager", "nothing compiled"),
    ):
        parts = startup_parts(plan, plan.servers[name], name, {})
        assert parts["restart_s"] == parts["total_s"] > 0
        assert why in parts["restart_source"] and "page cache across launches: unknown" in parts["restart_source"]


def test_from_run_a_relaunch_is_what_that_runs_relaunch_logged(tmp_path: Path) -> None:
    """The committed log of one server started twice, filed as a run's launch 1 and launch 2: the relaunch's
    figure is its own log's (compile from the cache 8.55 s, graphs 18 s), not the rule's."""
    lines = RELAUNCH_LOG.read_text(encoding="utf-8").splitlines(keepends=True)
    second = [i for i, line in enumerate(lines) if line.startswith("==== byog: starting")][1]
    first_dir, again_dir = tmp_path / "servers" / "graphs", tmp_path / "servers" / "graphs" / "launch-2"
    again_dir.mkdir(parents=True)
    for folder, text, ready in ((first_dir, lines[:second], 118.0), (again_dir, lines[second:], 82.0)):
        (folder / "server.log").write_text("".join(text), encoding="utf-8")
        (folder / "server.json").write_text(json.dumps({"name": "graphs", "starts": [{"ready_after_s": ready}]}))
    first, relaunched = measured_starts(tmp_path), measured_relaunches(tmp_path)
    assert (first["graphs"]["compile_s"], first["graphs"]["graph_capture_s"]) == (35.55, 24.0)
    assert (relaunched["graphs"]["compile_s"], relaunched["graphs"]["graph_capture_s"]) == (8.55, 18.0)
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 2_000_000)
    plan = _plan(tmp_path)
    parts = startup_parts(plan, plan.servers["cand"], "graphs", first, relaunched)  # type: ignore[attr-defined]
    again = relaunched["graphs"]
    load = parts["weights_gib_per_rank"] / again["rate_gib_s"]
    assert parts["restart_s"] == pytest.approx(load + 8.55 + 18.0 + again["other_s"])
    assert parts["restart_source"] == "--from-run (this server's relaunches, as logged)"
    other = startup_parts(plan, plan.servers["stock"], "stock", first, relaunched)  # type: ignore[attr-defined]
    assert other["restart_source"] == "--from-run (the median of its servers' relaunches)"
