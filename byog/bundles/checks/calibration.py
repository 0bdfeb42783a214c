"""Calibration: a calibration.json in a bundle belongs to the bundle's hardware, software and servers.

A one-launch run may take its launch-to-launch variance from an earlier A/A calibration
(``byog calibrate``, docs/statistics.md §6); that variance means something only for the setup it
was measured on. This check recomputes the fingerprint (``byog.analysis.calibration``) from the
bundle's env.json, server records and plan, and refuses a calibration that names another. It runs
before the summary check, whose recomputation would otherwise widen the CIs with it.
"""

from __future__ import annotations

from byog.analysis.calibration import CALIBRATION_NAME, CalibrationError, fingerprint_differences, load_calibration
from byog.bundles.checks.base import VerifyContext, check
from byog.core.errors import CheckFailed, UsageError
from byog.plans.load import parse_plan


@check("calibration", requires=("schemas",))
def calibration_belongs(ctx: VerifyContext) -> str:
    if not ctx.has(CALIBRATION_NAME):
        return "no calibration"
    try:
        calibration = load_calibration(ctx.root / CALIBRATION_NAME)
        plan = parse_plan(ctx.read("plan.yaml").decode("utf-8"), "plan.yaml")
    except (CalibrationError, UsageError, UnicodeDecodeError) as err:
        raise CheckFailed(f"calibration.json cannot be checked: {err}") from None
    differences = fingerprint_differences(calibration, ctx.run_dir, plan)
    if differences:
        raise CheckFailed(
            f"calibration.json ({calibration.created_at[:10]}, R = {calibration.launches}) was measured on another "
            f"{', '.join(differences)} than this bundle's: its launch variance does not apply here"
        )
    return (
        f"calibration of {calibration.created_at[:10]} (R = {calibration.launches}) matches the bundle's hardware "
        f"{calibration.fingerprint.hardware[:12]}, software {calibration.fingerprint.software[:12]} and servers"
    )
