"""summary.json: derived only from a run directory's raw records, so verify can recompute it.

The perf part comes from ``byog.bench.summary`` and the accuracy part from ``byog.evals.summary``;
this module only composes them. Deterministic: the same raw files give the same bytes.
"""

from __future__ import annotations

from typing import Any

import yaml

from byog.bundles.rundir import RunDir
from byog.plans.load import parse_plan

SUMMARY_SCHEMA_VERSION = 1


def derive_summary(run_dir: RunDir) -> dict[str, Any]:
    from byog.bench.summary import summarize_bench
    from byog.evals.summary import summarize_evals

    plan = parse_plan(run_dir.plan_yaml.read_text(encoding="utf-8"), str(run_dir.plan_yaml))
    return {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "plan": {"name": plan.name, "baseline": plan.baseline, "candidates": plan.candidates},
        "bench": summarize_bench(run_dir, plan),
        "evals": summarize_evals(run_dir, plan),
    }


def plan_of(run_dir: RunDir) -> dict[str, Any]:
    return yaml.safe_load(run_dir.plan_yaml.read_text(encoding="utf-8"))
