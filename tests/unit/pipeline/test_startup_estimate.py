"""``byog plan``'s start-up estimate: weights / load rate + compile + capture + rest (a run's vLLM log, or defaults)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from byog.pipeline.startup_estimate import (
    COMPILE_GUESS_S,
    GIB,
    GRAPH_CAPTURE_GUESS_S,
    OTHER_GUESS_S,
    STORAGE_RATE_GB_S,
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
