"""`byog check numerics` and `byog check conformance`: token-level correctness, candidate vs stock."""

from __future__ import annotations

import typer

from byog.cli.common import DataDirOpt, JsonOpt, PlanArg, RunDirOpt, TierOpt, command, print_json, reporter

check_app = typer.Typer(
    help="Token-level correctness of each candidate against its stock baseline.", no_args_is_help=True
)


@command(check_app, "numerics")
def numerics_cmd(
    plan: PlanArg = None,
    plan_opt: str | None = typer.Option(None, "--plan", help="Same as the PLAN argument."),
    run_dir: RunDirOpt = None,
    data_dir: DataDirOpt = None,
    tier: TierOpt = "full",
    as_json: JsonOpt = False,
) -> None:
    """Logprob differential: each candidate scored on its baseline's greedy token path, against the baseline's own A/A
    noise (exit 1 unless numerically equivalent)."""
    from byog.pipeline.check import check_plan

    summary = check_plan(plan_opt or plan, run_dir, reporter(as_json), "numerics", data_dir=data_dir, tier=tier)
    if as_json:
        print_json(summary.to_json().get("numerics"))


@command(check_app, "conformance")
def conformance_cmd(
    plan: PlanArg = None,
    plan_opt: str | None = typer.Option(None, "--plan", help="Same as the PLAN argument."),
    run_dir: RunDirOpt = None,
    tier: TierOpt = "full",
    as_json: JsonOpt = False,
) -> None:
    """Conformance suite on every server; each candidate held to what its baseline passes (exit 1 on a regression)."""
    from byog.pipeline.check import check_plan

    summary = check_plan(plan_opt or plan, run_dir, reporter(as_json), "conformance", tier=tier)
    if as_json:
        print_json(summary.to_json().get("numerics"))
