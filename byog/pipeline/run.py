"""`byog run`: the one-way pipeline (docs/architecture.md).

Plan -> prepare the model -> for each server config: launch, bench points, evals, stop ->
summary.json and report.md derived from the raw records -> manifest, signature, bundle.

With ``launches: R`` (or an A/A pair, which launches the baseline at least twice) the servers
are launched in rounds: round r launches every server that has an r-th launch, one after the
other, in reverse order every second round (ABBA), so slow drift of the machine spreads over all
servers instead of landing on one.
Launch r >= 2 runs the bench points only, into its own folder (``RunDir.for_launch``); evals
run on launch 1. Two servers of launch 1 that launch one after the other and run on GPUs of their own
(``byog.analysis.gpu_sets``) are up together: each is benched while the other idles, then their evals
run at once (``byog.pipeline.evals_at_once``); every other server runs alone, as above.

Every raw record is written atomically as it is produced, so an interrupted run keeps what it
finished and ``byog run PLAN`` again picks up where it stopped (byog.pipeline.resume).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, TypedDict

from byog.analysis import perf_equivalence
from byog.analysis.calibration import (
    CALIBRATION_NAME,
    CalibrationError,
    calibration_note,
    fingerprint_differences,
    load_calibration,
)
from byog.analysis.numerics_headline import numerics_headline, weakness
from byog.analysis.phases import shares_line
from byog.analysis.validity import comparison_invalid_reasons, remeasured_note
from byog.bench.sweep import run_bench_for_server
from byog.bundles.claims_in import read_claims_file
from byog.bundles.finalize import finalize_run
from byog.core.errors import ByogError
from byog.core.io import atomic_write_json, read_json
from byog.core.paths import RunDir
from byog.core.reporter import NullReporter, Reporter, Status, Table
from byog.evals.runner import check_evals_fit, run_evals_for_server
from byog.images.fingerprint import environment_fingerprint
from byog.images.models import prepare_model
from byog.pipeline.activity import add_warmups, phase, spent
from byog.pipeline.baseline_distance import record_baseline_distances
from byog.pipeline.derive import derive_and_write
from byog.pipeline.eval_turns import evals_done
from byog.pipeline.evals_at_once import AtOnce, run_evals_at_once, say_eval_order, with_evals_at_once
from byog.pipeline.interleave import (
    interleaved_record,
    interleaved_rounds,
    keep_after_fallback,
    resumed_fallback,
    run_interleaved_pair,
)
from byog.pipeline.launch import launch_server
from byog.pipeline.numerics import numerics_done, run_numerics_for_server, server_order
from byog.pipeline.opening import open_or_resume
from byog.pipeline.resume import resume_command
from byog.pipeline.signals import sigterm_as_interrupt, stop_shown, stopping_for, stopping_line
from byog.pipeline.start_progress import StartProgress, elapsed, watch_start
from byog.plans.expand import points_for_server
from byog.plans.numerics_roles import launch_config, resolve_control
from byog.report.format import struck
from byog.schemas.calibration import Calibration
from byog.schemas.manifest import BundleSubject, subject_arg
from byog.schemas.plan import Plan
from byog.schemas.server import Endpoint, PreparedModel, RunningServer, ServerRecord
from byog.schemas.summary import Summary


def server_work_done(plan: Plan, server: str, rd: RunDir) -> bool:
    """Every point of this launch (``rd.launch``) complete, and on launch 1 every eval too."""
    points_done = all(rd.bench_point_complete(server, p.point_id) for p in points_for_server(plan, server, rd.launch))
    return points_done and (rd.launch > 1 or (evals_done(plan, server, rd) and numerics_done(plan, server, rd)))


def launch_rounds(plan: Plan) -> list[tuple[int, str]]:
    """(launch, server) in the order they run: round by round, servers in plan order (with numerics,
    each baseline of a comparison before its candidates: ``server_order``) in odd rounds and in
    reverse in even ones (ABBA: a drift that is linear in time lands on both sides alike)."""
    rounds = max(plan.launches_of(name) for name in plan.servers)
    order = server_order(plan)
    launches = {name: plan.launches_of(name) if name in plan.servers else 1 for name in order}
    return [
        (launch, name)
        for launch in range(1, rounds + 1)
        for name in (order if launch % 2 else order[::-1])
        if launch <= launches[name]
    ]


def _label(name: str, rd: RunDir) -> str:
    return name if rd.launch == 1 else f"{name} (launch {rd.launch})"


@contextmanager
def _up(plan: Plan, name: str, model: PreparedModel, rd: RunDir, reporter: Reporter) -> Iterator[RunningServer]:
    """The server started, its start-up a phase; stopped when the block ends, however it ends."""
    config = launch_config(plan, name)
    label = _label(name, rd)
    starting = f": starting vLLM ({config.runtime} runtime)"
    said_stopping: list[bool] = []
    with (
        reporter.status(f"{starting}…", lead=label) as status,
        watch_start(rd.server_log(name), lambda p: show_start(reporter, status, label, starting, p, said_stopping)),
        phase(rd, "start", name),
    ):
        server: RunningServer = launch_server(plan, name, model, rd)
    try:
        reporter.line(f": up at {server.endpoint.base_url}", lead=label)
        if rd.launch == 1:  # its evals run after the bench: refused now, before hours of it
            check_evals_fit(plan, name, server.endpoint, rd)
        yield server
    finally:
        with stop_shown(reporter, label):
            server.stop()


def _bench(plan: Plan, name: str, server: RunningServer, rd: RunDir, data_dir: Path | None, reporter: Reporter) -> None:
    with spent(rd, name, "measure"):
        outcome = run_bench_for_server(plan, name, server, rd, reporter, data_dir=data_dir)
        add_warmups(rd, name, outcome["warmups"])


def _numerics(plan: Plan, name: str, endpoint: Endpoint, rd: RunDir, data_dir: Path | None, reporter: Reporter) -> None:
    if plan.numerics is not None:
        with spent(rd, name, "numerics"):
            run_numerics_for_server(plan, name, endpoint, rd, data_dir, reporter)


def run_server(
    plan: Plan, name: str, model: PreparedModel, rd: RunDir, data_dir: Path | None, reporter: Reporter
) -> None:
    with _up(plan, name, model, rd, reporter) as server:
        _bench(plan, name, server, rd, data_dir, reporter)
        if rd.launch == 1:
            with spent(rd, name, "eval"):
                run_evals_for_server(plan, name, server.endpoint, rd, data_dir, reporter)
            _numerics(plan, name, server.endpoint, rd, data_dir, reporter)


def run_servers_at_once(
    plan: Plan, step: AtOnce, model: PreparedModel, rd: RunDir, data_dir: Path | None, reporter: Reporter
) -> None:
    """Two servers on GPUs of their own (launch 1): both up, each benched while the other idles, then
    their evals at once, then numerics in launch order. A server whose work is complete is not started."""
    todo = [n for n in step.servers if not server_work_done(plan, n, rd)]
    for done in (n for n in step.servers if n not in todo):
        reporter.line(": every point and eval is already complete; not launched", lead=_label(done, rd))
    if len(todo) < 2:
        for name in todo:
            run_server(plan, name, model, rd, data_dir, reporter)
        return
    with ExitStack() as up:
        servers = {n: up.enter_context(_up(plan, n, model, rd, reporter)) for n in todo}
        for name in todo:
            _bench(plan, name, servers[name], rd, data_dir, reporter)
        run_evals_at_once(plan, {n: servers[n].endpoint for n in todo}, rd, data_dir, reporter, step.why)
        for name in todo:
            _numerics(plan, name, servers[name].endpoint, rd, data_dir, reporter)


def show_start(
    reporter: Reporter,
    status: Status,
    label: str,
    starting: str,
    progress: StartProgress,
    said_stopping: list[bool] | None = None,
) -> None:
    """A starting server's phase: the live line on a terminal; in a log or pipe, a plain line when
    the phase changes and one a minute while it lasts. After an interrupt, the stop instead
    (``said_stopping``: this start's stop was already said in a plain line)."""
    stopping = stopping_for()
    if stopping is not None and said_stopping is not None:  # the start is being torn down: say so
        if reporter.live:
            status.update(f": {stopping_line(stopping)}", lead=label)
        elif not said_stopping:
            reporter.line(f"{label}: {stopping_line(stopping)}")
            said_stopping.append(True)
        return
    said = f"{progress.phase} ({elapsed(progress.elapsed_s)})"
    if reporter.live:
        status.update(f"{starting}: {said}", lead=label)
    elif progress.changed or progress.new_minute:
        reporter.line(f"{label}{starting}: {said}")


def print_outcome(summary: Summary, reporter: Reporter) -> None:
    comparisons = [c for c in summary.bench.comparisons if c.metric == "decode_tok_s"]
    if comparisons:
        table = Table(
            "decode tok/s, candidate / baseline",
            ["pair", "point", "candidate", "baseline", "ratio", "95% CI", "note"],
            right={"candidate", "baseline", "ratio"},
        )
        points = {(p.server, p.point_id): p for p in summary.bench.points}
        for c in comparisons:
            ci = f"{c.ci_low:.3f}–{c.ci_high:.3f}" if c.ci_low is not None and c.ci_high is not None else "—"
            invalid = comparison_invalid_reasons(points, c)
            cells = [f"{c.candidate_value:.1f}", f"{c.baseline_value:.1f}", f"{c.ratio:.3f}", ci]
            note: str = c.label or ("within noise" if c.within_noise else "")
            if invalid:
                cells = [struck(cell) for cell in cells]
                note = "invalid: " + " / ".join(invalid)
            table = table.with_row(f"{c.candidate} vs {c.baseline}", c.point_id, *cells, note)
        reporter.table(table)
        for line in perf_equivalence.ci_notes(comparisons):
            reporter.line(line)
    for p in summary.bench.points:
        again = remeasured_note(p)
        if again:
            reporter.line(f"{p.server} {p.point_id}: {again}")
    if summary.evals.verdicts:
        table = Table(
            "accuracy, candidate − baseline (points)",
            ["task", "pair", "n", "d", "SE", "margin", "verdict", "|d| ≤ 1 SE", "observed re-draw"],
            right={"n", "d", "SE", "margin", "observed re-draw"},
        )
        for v in summary.evals.verdicts:
            verdict = (
                v.verdict
                + (f" ({', '.join(v.degenerate)})" if v.degenerate else "")
                + (f" [{v.screening_label or 'screening'}]" if v.screening else "")
            )
            table = table.with_row(
                v.task,
                f"{v.candidate} vs {v.baseline}",
                str(v.n),
                _fmt(v.d),
                _fmt(v.se_d),
                _fmt(v.margin),
                verdict,
                "—" if v.within_1se is None else ("yes" if v.within_1se else "no"),
                "—" if v.observed_redraw is None else f"{v.observed_redraw:.0%}",
            )
        reporter.table(table)
    print_numerics(summary, reporter)


def print_numerics(summary: Summary, reporter: Reporter) -> None:
    numerics = summary.numerics
    if numerics is None:
        return
    if numerics.comparisons:
        table = Table(
            "numerics, candidate vs baseline (envelope: stock against itself under another batch and its variant)",
            ["pair", "headline", "prefill", "decode", "max distance (envelopes)", "greedy outputs diverged"],
        )
        sensitivity = {s.baseline: s for s in numerics.sensitivity}
        for c in numerics.comparisons:
            fams = {f.family: f for f in c.families}
            decode = fams.get("decode")
            div = decode.candidate_divergence if decode else None
            aa_div = decode.aa_divergence if decode else None
            table = table.with_row(
                f"{c.candidate} vs {c.baseline}",
                numerics_headline(c, sensitivity.get(c.baseline)),
                fams["prefill"].verdict if "prefill" in fams else "—",
                decode.verdict if decode else "—",
                f"{c.max_distance:.3g}" if c.max_distance is not None else "—",
                f"{div.diverged}/{div.prompts} prompts (A/A {aa_div.diverged})" if div and aa_div else "—",
            )
        for sens in numerics.sensitivity:
            if not sens.sensitive:
                table = table.with_row(f"(baseline {sens.baseline})", "insensitive", "", "", "", weakness(sens))
        reporter.table(table)
    for pair in numerics.conformance:
        failed = [r for r in pair.checks if r.outcome == "fail"]
        reporter.line(
            f"conformance {pair.candidate} vs {pair.baseline}: "
            + ("conforms" if pair.conforms else "; ".join(f"{r.check}: {r.reason}" for r in failed))
        )


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:+.2f}"


class RunOutcome(TypedDict):
    """What ``byog run --json`` prints."""

    run_dir: str
    bundle: str | None  # None: nothing was packed (see the run's output)
    wall_s: float
    summary: dict[str, Any]  # summary.json's document


def with_candidate_commit(subject: BundleSubject | None, plan: Plan, rd: RunDir) -> BundleSubject | None:
    """``--for OWNER/REPO#N`` with the commit every candidate ran beside it (server.json's identity),
    when they all name one; a released build names none and the subject stays the PR alone."""
    if subject is None or subject.pr is None or subject.commit is not None:
        return subject
    commits: set[str | None] = set()
    for name in plan.candidates:
        path = rd.server_dir(name) / "server.json"
        try:
            record = ServerRecord.model_validate_json(path.read_bytes())
        except (OSError, ValueError):
            return subject
        identities = [n.identity for n in record.nodes or []] or [record.identity]
        commits |= {i.vllm.commit if i is not None and i.vllm is not None else None for i in identities}
    if len(commits) != 1 or None in commits:
        return subject
    return subject.model_copy(update={"commit": commits.pop()})


def adopt_calibration(calibration: Calibration, rd: RunDir, plan: Plan, reporter: Reporter) -> None:
    """Keep the calibration as the run's calibration.json, once it is shown to be this run's."""
    differences = fingerprint_differences(calibration, rd, plan)
    if differences:
        raise CalibrationError(
            f"the calibration of {calibration.created_at[:10]} was measured on another {', '.join(differences)}; "
            "this run's results are kept: rerun `byog derive` without it, or calibrate this setup"
        )
    atomic_write_json(rd.root / CALIBRATION_NAME, calibration.model_dump(mode="json"))
    reporter.line(f"one-launch CIs: {calibration_note(calibration)}")


def run_plan(
    plan_ref: str | None,
    run_dir: Path | None,
    reporter: Reporter = NullReporter(),
    data_dir: Path | None = None,
    tier: str = "full",
    subject: str | None = None,
    *,
    new: bool = False,
    claims: Path | None = None,
    calibration: Path | None = None,
) -> RunOutcome:
    """``subject``: OWNER/REPO#PR the bundle is for (``byog run --for``), checked before anything runs.

    Without ``run_dir`` the newest unfinished run of the plan resumes (``new``: a new one). Every
    stop after the run directory exists (an interrupt, a failure) carries the command that resumes
    it (``resume`` on the exception, printed by the CLI after the error). ``claims``: a claims file,
    read now and matched to the measured points before the bundle is signed. ``calibration``: a
    ``byog calibrate`` file whose launch variance widens the one-launch CIs; it must match this
    run's fingerprint (checked once the servers ran) and is kept as calibration.json.
    """
    held = load_calibration(calibration) if calibration is not None else None
    started = time.monotonic()
    bundle_subject = subject_arg(subject)
    given = read_claims_file(claims) if claims is not None else None
    try:
        plan, rd, said = open_or_resume(plan_ref, run_dir, tier, new=new, claims=given, data_dir=data_dir)
    except ByogError as err:
        err.resume = err.resume or f"{resume_command(plan_ref, tier, run_dir, None)}   (once that is fixed)"
        raise
    for line in said:
        reporter.line(line)
    reporter.line(f"byog run: plan {plan.name} -> {rd.root}")
    try:
        _measure(plan, rd, data_dir, reporter)
    except (KeyboardInterrupt, ByogError) as err:
        err.resume = resume_command(plan_ref, tier, rd.root, plan.name)  # type: ignore[union-attr]  # KeyboardInterrupt too
        raise
    if held is not None:
        adopt_calibration(held, rd, plan, reporter)
    for line in record_baseline_distances(plan, rd):
        reporter.line(line)
    closing = time.monotonic()
    summary = derive_and_write(rd.root, reporter)
    print_outcome(summary, reporter)
    bundle = finalize_run(rd, reporter, subject=with_candidate_commit(bundle_subject, plan, rd), claims=claims)
    wall_s = time.monotonic() - started
    if summary.phases is not None:
        after = time.monotonic() - closing
        went = shares_line(summary.phases, bench=bool(summary.bench.points))
        reporter.line(f"where the time went: {went}; then deriving and packing {after:.1f} s")
    reporter.line(f"run directory: {rd.root}   wall time: {wall_s:.0f} s")
    return {
        "run_dir": str(rd.root),
        "bundle": str(bundle) if bundle else None,
        "wall_s": round(wall_s, 1),
        "summary": summary.to_json(),
    }


def _measure(plan: Plan, rd: RunDir, data_dir: Path | None, reporter: Reporter) -> None:
    """Every server's launches, points, evals and numerics not already complete in ``rd``."""
    if not rd.env_json.is_file():
        atomic_write_json(rd.env_json, environment_fingerprint())
    plan = resolve_control(plan, read_json(rd.env_json))
    with reporter.status("preparing the model (the built-in default converts once, ~20 s)…"):
        model = prepare_model(plan.model)
    host_gpus = read_json(rd.env_json).get("gpu")
    steps, choices = with_evals_at_once(plan, interleaved_rounds(plan, launch_rounds(plan)), host_gpus)
    say_eval_order(rd, choices, reporter)
    with sigterm_as_interrupt():
        for launch, name in steps:
            launch_dir = rd.for_launch(launch)
            if isinstance(name, AtOnce):
                run_servers_at_once(plan, name, model, launch_dir, data_dir, reporter)
                continue
            if isinstance(name, tuple):
                if not all(server_work_done(plan, n, launch_dir) for n in name):
                    fallen = resumed_fallback(plan, name, launch_dir)  # a failed wake stays failed across a resume
                    if fallen:
                        reporter.line(f"{' and '.join(name)}: a wake failed its check before the stop; sequential")
                    kept = fallen or run_interleaved_pair(plan, name, model, launch_dir, data_dir, reporter)
                    for n, sleep_record in kept.items():
                        earlier = interleaved_record(launch_dir, n) or {}  # a fresh start rewrites server.json
                        if not server_work_done(plan, n, launch_dir):
                            run_server(plan, n, model, launch_dir, data_dir, reporter)
                        elif read_json(launch_dir.server_record(n)).get("sleep_mode"):
                            continue  # its sequential part finished and was recorded before the stop
                        keep_after_fallback(launch_dir, n, sleep_record, earlier)
                continue
            if server_work_done(plan, name, launch_dir):
                reporter.line(": every point and eval is already complete; not launched", lead=_label(name, launch_dir))
                continue
            run_server(plan, name, model, launch_dir, data_dir, reporter)
