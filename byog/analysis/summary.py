"""summary.json: derived only from a run directory's raw records, so verify can recompute it.

The perf part comes from ``byog.analysis.bench_summary``, the accuracy part from
``byog.analysis.eval_summary``, the numerics part from ``byog.analysis.numerics_summary``; this
module only composes them. Deterministic: the same raw files give the same bytes.
"""

from __future__ import annotations

from byog.analysis import wake
from byog.analysis.bench_summary import summarize_bench
from byog.analysis.eval_summary import summarize_evals
from byog.analysis.numerics_summary import summarize_numerics
from byog.analysis.phases import phase_time
from byog.analysis.time_to_verdict import server_records, time_to_verdict
from byog.core.paths import RunDir
from byog.plans.load import parse_plan
from byog.schemas.plan import Plan
from byog.schemas.summary import Summary, SummaryPlan


def plan_of(run_dir: RunDir) -> Plan:
    return parse_plan(run_dir.plan_yaml.read_text(encoding="utf-8"), str(run_dir.plan_yaml))


def derive_summary(run_dir: RunDir, launch_ci: bool = True) -> Summary:
    """``launch_ci=False``: comparisons over launches take the hierarchical bootstrap and one-launch
    ones carry no wording or label, as byog computed them before summary schema 7 (verify
    re-renders an older report.md from that)."""
    plan = plan_of(run_dir)
    bench = summarize_bench(run_dir, plan, launch_ci)
    bench.wake_integrity = wake.integrity(server_records(run_dir, plan), plan)
    return Summary(
        plan=SummaryPlan(name=plan.name, baseline=plan.baseline, candidates=plan.candidates),
        bench=bench,
        evals=summarize_evals(run_dir, plan),
        numerics=summarize_numerics(run_dir, plan),
        time_to_verdict=time_to_verdict(run_dir, plan),
        phases=phase_time(run_dir),
    )
