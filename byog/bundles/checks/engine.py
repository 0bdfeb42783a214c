"""``engine``: each server's vLLM as installed, held to its RECORD, and its start-up hooks.

One line per server (and per node of a multi-node server): clean, patched (naming what), patched
under the policy's waiver, or unknown (``byog.analysis.engine_integrity``). Without a policy that
sets ``forbid_engine_patches`` the lines inform and the check passes; with it, a patch no waiver
covers fails, and so does unknown: byog cannot tell an unchecked install from a clean one.
"""

from __future__ import annotations

from byog.analysis.engine_integrity import verdicts
from byog.bundles.checks.base import Found, VerifyContext, check, counted
from byog.bundles.checks.identity import recorded_plan, recorded_server, unlaunched


@check("engine", requires=("schemas",))
def engine_is_unpatched(ctx: VerifyContext) -> Found:
    plan = recorded_plan(ctx)
    policy = ctx.policy
    waivers = policy.engine_patch_waivers if policy is not None else {}
    found = [
        v
        for name in plan.servers
        if not unlaunched(ctx, name)
        for v in verdicts(name, recorded_server(ctx, name), waivers)
    ]
    lines = [v.line for v in found]
    details = {"servers": lines}
    if policy is None or not policy.forbid_engine_patches:
        return Found("; ".join(lines) or "no server launched", details=details)
    failures = [v.line for v in found if v.status in ("patched", "unknown")]
    details["failed"] = failures
    if failures:
        return Found(
            counted([f"{line} (the policy forbids engine patches)" for line in failures], "engine problems"),
            failed=True,
            details=details,
        )
    return Found("; ".join(lines), details=details)
