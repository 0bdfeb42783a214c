"""``records``: the order and the times a bundle's records claim can be a run's, before anything is
computed or rendered from them.

An interleaved pair's ABBA order is read from its rows' times and its servers' swaps
(``byog.analysis.interleave_records``), never from the labels alone; the time-to-verdict records
(starts, activity spans, swaps) must be possible (``byog.analysis.time_to_verdict.check_records``), and
so must the run's phase record, phases.json: its order and times (``byog.analysis.phases.phase_problems``),
and any evals it says ran at once, on GPU sets the plan keeps apart (``eval_order_problems``).
"""

from __future__ import annotations

from pathlib import Path

from byog.analysis.gpu_sets import cards_seen
from byog.analysis.interleave_records import check_interleaving
from byog.analysis.phases import eval_order_problems, phase_problems, read_phases
from byog.analysis.summary import plan_of
from byog.analysis.time_to_verdict import check_records
from byog.bundles.checks.base import Found, VerifyContext, check, counted
from byog.core.errors import CheckFailed
from byog.core.io import read_json


@check("records", requires=("schemas",))
def records_are_possible(ctx: VerifyContext) -> Found:
    plan = plan_of(ctx.run_dir)
    interleaving = check_interleaving(ctx.run_dir, plan)
    problems = check_records(ctx.run_dir, plan) + interleaving.problems
    try:
        phases = read_phases(ctx.run_dir)
        if phases is not None:
            env = read_json(ctx.run_dir.env_json) if ctx.run_dir.env_json.is_file() else None
            gpu = env.get("gpu") if isinstance(env, dict) else None
            seen = {name: cards_seen(_record(ctx.run_dir.server_record(name))) for name in plan.servers}
            found = phase_problems(phases) + eval_order_problems(phases, plan, gpu, seen)
            problems += [f"phases.json: {p}" for p in found]
    except CheckFailed as err:
        phases = None
        problems.append(str(err))
    details = {"failed": problems, "interleaved": sorted(f"{s} at {p}" for s, p in interleaving.held)}
    if problems:
        return Found(counted(problems, "time records are impossible"), failed=True, details=details)
    pairs = len(plan.interleaved_pairs)
    held = f"; {pairs} interleaved pair(s) took turns ABBA, as their swaps and times show" if pairs else ""
    recorded = f"; {len(phases.phases)} phases in order" if phases is not None else ""
    return Found(f"the servers' time records are possible{held}{recorded}", details=details)


def _record(path: Path) -> object:
    """A server.json document, or None where there is none."""
    return read_json(path) if path.is_file() else None
