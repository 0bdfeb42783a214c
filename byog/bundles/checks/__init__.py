"""verify's checks: small named units, run in the order of ``CHECKS``, reported together.

``CHECKS`` is the one list of what verify runs and in which order (each check declares its
name and what it needs with ``@check``): the order is declared here, not left to the order of
imports, because a check may require another to have passed first. First what needs no trust
and reads only the gate members (manifest, signature), then, for a trusted signer only, the
hashes of every other member, the subject and the content checks (bounds, predicate, schemas,
records, stopping, tasks, plan, calibration, sequential, strata, summary, report, attestations, identity, pairs, commit,
engine, weights, policy, claims).
"""

from byog.bundles.checks import (
    attestations,
    bounds,
    calibration,
    claims,
    engine,
    identity,
    integrity,
    plan_pin,
    policy,
    predicate,
    recompute,
    records,
    schemas,
    sequential,
    signature,
    stopping,
    strata,
    tasks,
    weights,
)
from byog.bundles.checks.base import Check, CheckResult, VerifyContext, in_order, run_checks, run_one

CHECKS: tuple[Check, ...] = in_order(
    (
        integrity.manifest_parses,
        signature.signed_by_allowed_signer,
        integrity.hashes_match,
        signature.made_for_this_subject,
        bounds.within_bounds,
        predicate.predicate_matches_files,
        schemas.files_match_schemas,
        records.records_are_possible,
        stopping.stopping_recomputes,
        tasks.tasks_are_byogs,
        plan_pin.ran_the_given_plan,
        calibration.calibration_belongs,
        sequential.sequential_decisions_recompute,
        strata.strata_recompute,
        recompute.summary_recomputes,
        recompute.report_rerenders,
        attestations.attestations_rebuild,
        identity.identity_is_consistent,
        identity.pairs_are_fair,
        identity.bound_to_commit,
        engine.engine_is_unpatched,
        weights.weights_say_the_same,
        policy.meets_policy,
        claims.claims_hold,
    )
)

__all__ = ["CHECKS", "Check", "CheckResult", "VerifyContext", "run_checks", "run_one"]
