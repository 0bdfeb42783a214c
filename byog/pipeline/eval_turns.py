"""An interleaved pair's evals in turns on its one GPU, in the same looks (``byog.evals.lockstep``).

Side A (the baseline) is woken and runs its evals until a task with looks needs B's items of a look
B has not run (``TurnOver``); then B is woken and runs up to where it needs A's, and so on. Each side
judges every look on the same paired items, so both stop at the look where the gate stops, where a
side that ran every item before stopped only the later one. A task without looks runs whole in one
turn. Each turn is an eval span of its server and each wake a swap (``Pair.on``: its wake-up check
included), so no two eval spans overlap. A rerun reads every look on disk back, as at once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from byog.analysis.interleave import Side
from byog.core.paths import RunDir
from byog.core.reporter import Reporter
from byog.evals.lockstep import Partner, TurnOver
from byog.evals.runner import run_evals_for_server
from byog.pipeline.activity import spent
from byog.schemas.plan import Plan
from byog.schemas.server import Endpoint

SIDES: tuple[Side, Side] = ("A", "B")


def evals_done(plan: Plan, server: str, rd: RunDir) -> bool:
    """Every eval of the plan that names ``server`` complete in ``rd``."""
    return all(rd.eval_complete(server, spec.task) for spec in plan.evals if server in plan.servers_for(spec))


def _progress(plan: Plan, names: dict[Side, str], rd: RunDir) -> tuple[int, int]:
    """Looks on disk and tasks complete, over both sides: a round of turns must add to one of them."""
    looks = done = 0
    for server in names.values():
        for spec in plan.evals:
            if server in plan.servers_for(spec):
                looks += len(list((rd.eval_dir(server, spec.task) / ".looks").glob("look-*.json")))
                done += rd.eval_complete(server, spec.task)
    return looks, done


def _never() -> bool:
    return False


def run_evals_in_turns(
    plan: Plan,
    names: dict[Side, str],
    endpoints: dict[Side, Endpoint],
    wake: Callable[[Side], object],
    rd: RunDir,
    data_dir: Path | None,
    reporter: Reporter,
) -> None:
    """Both sides' evals, a turn at a time (``wake(side)``: that side's server on the GPU, the other
    asleep), until both are complete."""
    while True:
        pending = [side for side in SIDES if not evals_done(plan, names[side], rd)]
        if not pending:
            return
        before = _progress(plan, names, rd)
        for side in pending:
            other = names["B" if side == "A" else "A"]
            wake(side)
            try:
                with spent(rd, names[side], "eval"):
                    run_evals_for_server(
                        plan,
                        names[side],
                        endpoints[side],
                        rd,
                        data_dir,
                        reporter,
                        Partner(other, gone=_never, in_turns=True),
                    )
            except TurnOver as turn:
                reporter.line(f"{names[side]}: {turn}")
        if _progress(plan, names, rd) == before:  # each turn runs a look or more: a bug if none did
            raise RuntimeError(f"the evals of {' and '.join(names.values())} in turns made no progress in a round")
