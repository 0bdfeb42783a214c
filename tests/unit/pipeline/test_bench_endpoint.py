"""`byog bench`'s flags become the plan the sweep runs: the closed loop's warm-up prompts, how often a point is
measured again; where its run goes."""

from __future__ import annotations

from pathlib import Path

import pytest

from byog.core.errors import ByogError, UsageError
from byog.core.reporter import NullReporter
from byog.core.settings import RUNS_DIR_ENV
from byog.pipeline.bench_endpoint import BenchFlags, bench_endpoint, plan_from_flags
from byog.schemas.plan import Plan


def test_warmup_prompts_reach_the_closed_loop_workload() -> None:
    flags = BenchFlags(
        endpoint="http://127.0.0.1:8000", workload="concurrency", concurrencies=[8], num_prompts=32, warmup_prompts=8
    )
    plan, text = plan_from_flags(flags, "m")
    (workload,) = plan.workloads
    assert (workload.kind, workload.warmup_prompts, workload.num_prompts) == ("concurrency", 8, 32)
    assert "warmup_prompts: 8" in text  # the plan.yaml the run directory keeps says so too


def test_without_the_flag_nothing_is_warmed_up() -> None:
    plan, _ = plan_from_flags(BenchFlags(endpoint="http://127.0.0.1:8000", workload="concurrency"), "m")
    assert plan.workloads[0].warmup_prompts == 0


def test_remeasure_reaches_the_plan_and_without_it_the_plan_text_is_unchanged() -> None:
    endpoint = "http://127.0.0.1:8000"
    never, never_text = plan_from_flags(BenchFlags(endpoint=endpoint, remeasure=0), "m")
    default, default_text = plan_from_flags(BenchFlags(endpoint=endpoint), "m")
    assert never.remeasure == 0 and "remeasure: 0" in never_text
    # the schema's default, and no new line: a run directory made before the flag resumes with the same flags
    assert default.remeasure == Plan.model_fields["remeasure"].default > 0 and "remeasure" not in default_text


def test_remeasure_with_a_plan_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    flags = BenchFlags(endpoint="http://127.0.0.1:9", plan=str(tmp_path / "plan.yaml"), remeasure=0)
    with pytest.raises(UsageError, match="with --plan, set `remeasure` in the plan"):
        bench_endpoint(flags, tmp_path / "run", NullReporter())
    assert not (tmp_path / "run").exists()


def test_a_new_run_directory_goes_under_byog_runs_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The plan.yaml is written before the endpoint is asked anything; nothing listens on port 9."""
    runs, elsewhere = tmp_path / "runs-here", tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv(RUNS_DIR_ENV, str(runs))
    with pytest.raises(ByogError):
        bench_endpoint(BenchFlags(endpoint="http://127.0.0.1:9", model="m", tokenizer="t"), None, NullReporter())
    (made,) = runs.iterdir()
    assert made.name.startswith("bench-") and (made / "plan.yaml").is_file()
    assert list(elsewhere.iterdir()) == []
