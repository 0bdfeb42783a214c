"""in-toto views of a bundle's verdicts: attestations.intoto.jsonl, one test-result statement per gate.

A policy engine or admission check that speaks in-toto reads byog's gates without byog: each
accuracy verdict, each claim, the points' validity, each pair's fairness (without a policy: a
contradiction or an undeclared hardware or model difference fails, an unknown side warns) and
each server's engine integrity (clean passes, patched fails, unknown warns; a policy's waivers
are verify's, not the bundle's) and, from report format 7, each interleaved pair's wake integrity
becomes a Statement v1 with predicate
``https://in-toto.io/attestation/test-result/v0.1`` (``result`` PASSED, WARNED or FAILED, the
gate's name under passed/warned/failedTests). Subject: each candidate's vLLM, by the commit it
was built from (``gitCommit``) and its wheel's sha256, as read where it ran (server.json
``identity.vllm``); a candidate that recorded neither is named by its server.json's sha256.
Configuration: the plan (the pinned plan file's sha256, else plan.yaml's) and each server's image
digests. The file is derived data, a pure function of the summary, the raw files and the bundle's
report format, so verify rebuilds it and compares (``byog.bundles.checks.attestations``).

From report format 7 (``WARNINGS_ATTESTED``) no statement says PASSED beside a first-screen warning
that undermines it: the statements read the report's own warnings (``byog.report.setup.warnings``,
decided by ``byog.analysis.caveats``); one that voids a gate makes its statement FAILED, one that
limits it makes a PASSED one WARNED, and the statement's name then ends with the warnings' words.
A bundle of an older format rebuilds as that byog wrote it.

``verification_result`` is the verifier's own Simple Verification Result (svr/v0.1) for
``byog verify --emit-attestations``, which writes nothing for a bundle whose integrity is not
established (``emit_refusal``): statements re-issued from an archive whose hashes or signer did
not hold, or were not checked (``--allow-unsigned``), would lend it a credibility it lacks.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from byog.analysis.caveats import Gate
from byog.analysis.claims import evaluate_claim
from byog.analysis.engine_integrity import verdicts as engine_verdicts
from byog.analysis.pair_diff import compare_pair
from byog.analysis.points import one_point
from byog.analysis.summary import plan_of
from byog.core.canonical import canonical_json
from byog.core.errors import ByogError
from byog.core.io import atomic_write_bytes
from byog.core.paths import CLAIMS_NAME, RunDir
from byog.report.context import ReportContext, ReportInputs
from byog.report.markdown import REPORT_VERSION
from byog.report.setup import WarningLine, plain, warnings
from byog.schemas.claims import Claim, ClaimsFile, ValueClaim, VerdictClaim
from byog.schemas.env import EnvRecord
from byog.schemas.evals import EvalVerdict
from byog.schemas.plan_pin import PLAN_PIN_NAME
from byog.schemas.server import ServerRecord
from byog.schemas.summary import Summary

ATTESTATIONS_NAME = "attestations.intoto.jsonl"
SVR_NAME = "verification.intoto.json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
TEST_RESULT = "https://in-toto.io/attestation/test-result/v0.1"
SVR = "https://in-toto.io/attestation/svr/v0.1"
VERIFIER_ID = "https://byog.dev/verify/v1"
_IMAGE_DIGEST = "@sha256:"
WARNINGS_ATTESTED = 7  # the first report format whose statements read the first screen's warnings
_RANK = {"PASSED": 0, "WARNED": 1, "FAILED": 2}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _record(run_dir: RunDir, server: str) -> ServerRecord | None:
    path = run_dir.server_record(server)
    return ServerRecord.model_validate_json(path.read_bytes()) if path.is_file() else None


def candidate_subject(run_dir: RunDir, server: str) -> dict[str, Any]:
    """The candidate's vLLM as an in-toto ResourceDescriptor: gitCommit and the wheel's sha256 where known."""
    record = _record(run_dir, server)
    vllm = record.identity.vllm if record is not None and record.identity is not None else None
    digest = {"gitCommit": vllm.commit, "sha256": vllm.wheel_sha256} if vllm is not None else {}
    digest = {key: value for key, value in digest.items() if value}
    if digest:
        return {"name": f"vllm ({server})", "digest": digest}
    path = run_dir.server_record(server)
    name = path.relative_to(run_dir.root).as_posix()
    return {"name": name, "digest": {"sha256": _sha256(path.read_bytes() if path.is_file() else b"")}}


def configuration(run_dir: RunDir, servers: Iterable[str]) -> list[dict[str, Any]]:
    """The plan and every server's image digests, as ResourceDescriptors."""
    pin = run_dir.root / PLAN_PIN_NAME
    plan_sha = json.loads(pin.read_bytes())["file_sha256"] if pin.is_file() else _sha256(run_dir.plan_yaml.read_bytes())
    found = [{"name": "plan", "digest": {"sha256": plan_sha}}]
    for server in servers:
        record = _record(run_dir, server)
        if record is None:
            continue
        for image in sorted(set(record.repo_digests) | set(record.image_digests)):
            if _IMAGE_DIGEST in image:
                name, digest = image.split(_IMAGE_DIGEST, 1)
                found.append({"name": f"image {server}: {name}", "digest": {"sha256": digest}})
    return found


def _statement(subjects: list[dict[str, Any]], result: str, test: str, config: list[dict[str, Any]]) -> dict[str, Any]:
    tests = {"PASSED": "passedTests", "WARNED": "warnedTests", "FAILED": "failedTests"}
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects,
        "predicateType": TEST_RESULT,
        "predicate": {"result": result, "configuration": config, tests[result]: [test]},
    }


def verdict_result(verdict: EvalVerdict) -> str:
    """An accuracy verdict as a test result: equivalent passes (a screening design only warns), inconclusive warns."""
    if verdict.verdict == "equivalent":
        return "WARNED" if verdict.screening else "PASSED"
    return "WARNED" if verdict.verdict == "inconclusive" else "FAILED"


class _Gates:
    """The bundle's first-screen warnings, held against each statement (none before ``WARNINGS_ATTESTED``)."""

    def __init__(self, run_dir: RunDir, summary: Summary, report_format: int) -> None:
        self.warned: list[WarningLine] = []
        if report_format >= WARNINGS_ATTESTED:
            ctx = ReportContext(run_dir, summary, ReportInputs(image_base=None), report_format)
            self.warned = warnings(ctx)

    def judge(
        self, result: str, test: str, gate: Gate, servers: Iterable[str], point: str | None = None
    ) -> tuple[str, str]:
        """(result, test) once the warnings about ``servers`` (at ``point``) that undermine ``gate`` are taken in."""
        named = list(servers)
        hits = [w for w in self.warned if w.caveat.undermines(gate, named, point)]
        worst = "FAILED" if any(gate in w.caveat.voids for w in hits) else "WARNED" if hits else result
        if _RANK[worst] <= _RANK[result]:
            return result, test
        words = "; ".join(plain(w.line).removeprefix("⚠ ").removeprefix("❔ ") for w in hits)
        return worst, f"{test}; warning: {words}"


def _claim_gate(summary: Summary, claim: Claim) -> tuple[Gate, tuple[str, ...], str | None]:
    """The gate a claim attests, the servers it is about, and its point (None where it names none it can)."""
    if isinstance(claim, VerdictClaim):
        return "accuracy", (claim.candidate,), None
    servers = (claim.server,) if isinstance(claim, ValueClaim) else (claim.candidate, claim.baseline)
    try:
        point: str | None = one_point(summary, servers[0], point=claim.point, select=claim.select).point_id
    except ByogError:
        point = None  # the claim itself fails or is not checked: said by its own result
    return "speed claim", servers, point


def statements(run_dir: RunDir, summary: Summary, report_format: int = REPORT_VERSION) -> list[dict[str, Any]]:
    """One test-result statement per gate, in a fixed order: verdicts, claims, validity, pairs, engines,
    wake integrity; ``report_format``: the bundle's (which rules it was written under)."""
    gates = _Gates(run_dir, summary, report_format)
    candidates = summary.plan.candidates
    servers = [*candidates, summary.plan.baseline]
    config = configuration(run_dir, servers)
    every = [candidate_subject(run_dir, name) for name in candidates]
    found = []
    for v in summary.evals.verdicts:
        test = (
            f"accuracy {v.task}: {v.candidate} vs {v.baseline}{' (speculative)' if v.speculative else ''}: {v.verdict}"
        )
        result, test = gates.judge(verdict_result(v), test, "accuracy", (v.candidate, v.baseline))
        found.append(_statement([candidate_subject(run_dir, v.candidate)], result, test, config))
    claims_file = run_dir.root / CLAIMS_NAME
    if claims_file.is_file():
        for claim in ClaimsFile.model_validate(yaml.safe_load(claims_file.read_bytes())).claims:
            outcome = evaluate_claim(summary, claim)
            result = {"holds": "PASSED", "fails": "FAILED"}.get(outcome.outcome, "WARNED")
            test = f"claim {outcome.label}: claimed {outcome.claimed}: {outcome.outcome}"
            gate, about, point = _claim_gate(summary, claim)
            found.append(_statement(every, *gates.judge(result, test, gate, about, point), config))
    invalid = [p for p in summary.bench.points if not p.valid]
    if summary.bench.points and every:
        test = (
            f"validity: {len(invalid)} of {len(summary.bench.points)} points invalid"
            if invalid
            else f"validity: all {len(summary.bench.points)} points valid"
        )
        result, test = gates.judge("FAILED" if invalid else "PASSED", test, "validity", servers)
        found.append(_statement(every, result, test, config))
    found += _pair_statements(run_dir, summary, every, config, gates)
    found += _engine_statements(run_dir, summary, config, gates)
    if report_format >= WARNINGS_ATTESTED:
        found += _wake_statements(summary, every, config, gates)
    return found


def _pair_statements(
    run_dir: RunDir, summary: Summary, every: list[dict[str, Any]], config: list[dict[str, Any]], gates: _Gates
) -> list[dict[str, Any]]:
    # verify's pair rules, imported here: byog.bundles.checks imports this module (the attestations check)
    from byog.analysis.pair_diff import pair_line
    from byog.bundles.checks.identity import pair_failures

    env = run_dir.env_json
    host = EnvRecord.model_validate_json(env.read_bytes()) if env.is_file() else EnvRecord()
    found = []
    for pair in plan_of(run_dir).comparison_pairs:
        records = (_record(run_dir, pair.candidate), _record(run_dir, pair.baseline))
        if records[0] is None or records[1] is None:
            continue  # a server byog did not launch: nothing to compare
        diff = compare_pair((pair.candidate, pair.baseline), (records[0], records[1]), host)
        failures = pair_failures(pair, diff, None)
        result = "FAILED" if failures else "WARNED" if diff.unknown else "PASSED"
        result, test = gates.judge(result, f"pair: {pair_line(pair, diff)}", "pair", (pair.candidate, pair.baseline))
        subject = [candidate_subject(run_dir, pair.candidate)] if pair.candidate in summary.plan.candidates else every
        found.append(_statement(subject, result, test, config))
    return found


def _engine_statements(
    run_dir: RunDir, summary: Summary, config: list[dict[str, Any]], gates: _Gates
) -> list[dict[str, Any]]:
    found = []
    candidates = summary.plan.candidates
    every = [candidate_subject(run_dir, name) for name in candidates]
    results = {"clean": "PASSED", "patched": "FAILED", "waived": "FAILED", "unknown": "WARNED"}
    for name in [*candidates, summary.plan.baseline]:
        record = _record(run_dir, name)
        if record is None:
            continue
        subject = [candidate_subject(run_dir, name)] if name in candidates else every
        for v in engine_verdicts(name, record, {}):
            result, test = gates.judge(results[v.status], f"engine integrity {v.line}", "engine", (name,))
            found.append(_statement(subject, result, test, config))
    return found


def _wake_statements(
    summary: Summary, every: list[dict[str, Any]], config: list[dict[str, Any]], gates: _Gates
) -> list[dict[str, Any]]:
    """Per interleaved pair and launch: its wake checks (a failed one is a first-screen warning that voids it)."""
    found = []
    for w in summary.bench.wake_integrity:
        launch = f" (launch {w.launch})" if w.launch > 1 else ""
        test = (
            f"wake integrity {w.candidate} vs {w.baseline}{launch}: {w.method}: "
            f"{w.wakes_matched} of {w.wakes_checked} wake checks matched"
        )
        own = "FAILED" if w.wakes_matched < w.wakes_checked and not w.changed else "PASSED"
        found.append(_statement(every, *gates.judge(own, test, "wake integrity", (w.candidate, w.baseline)), config))
    return found


def attestations_bytes(run_dir: RunDir, summary: Summary, report_format: int = REPORT_VERSION) -> bytes:
    """attestations.intoto.jsonl: one RFC 8785 canonical statement per line, under the rules of ``report_format``."""
    found = statements(run_dir, summary, report_format)
    return b"".join(canonical_json(s, label="an attestation") + b"\n" for s in found)


def verification_result(subjects: list[dict[str, Any]], properties: list[str], time_created: str) -> dict[str, Any]:
    """The verifier's own Simple Verification Result (svr/v0.1) over the statements' subjects."""
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects,
        "predicateType": SVR,
        "predicate": {"verifier": {"id": VERIFIER_ID}, "timeCreated": time_created, "properties": properties},
    }


# verify's checks that establish the bundle is what its signer packed, and the engine it measured
INTEGRITY_CHECKS = ("archive", "manifest", "signature", "hashes")


def emit_refusal(statuses: dict[str, str]) -> str | None:
    """Why ``--emit-attestations`` writes nothing, or None: a bundle integrity check that did not pass
    (a skip is unknown), or the engine check failing the policy."""
    unsettled = [f"{name} {statuses.get(name, 'not run')}" for name in INTEGRITY_CHECKS if statuses.get(name) != "pass"]
    if unsettled:
        return f"no attestations written: the bundle's integrity is not established ({', '.join(unsettled)})"
    if statuses.get("engine") == "fail":
        return "no attestations written: a server's engine integrity fails the policy (engine fail)"
    return None


def emit(out_dir: Path, lines: list[str], passed_checks: list[str], verified: bool, bundle_sha256: str) -> list[Path]:
    """``verify --emit-attestations DIR``: the bundle's statements (as verify rebuilt them) and verify's own SVR."""
    out_dir.mkdir(parents=True, exist_ok=True)
    subjects: list[dict[str, Any]] = [{"name": "bundle.tar.gz", "digest": {"sha256": bundle_sha256}}]
    for line in lines:
        for subject in json.loads(line)["subject"]:
            if subject not in subjects:
                subjects.append(subject)
    properties = (["BYOG_VERIFIED"] if verified else []) + [f"BYOG_CHECK_{name.upper()}" for name in passed_checks]
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    written = [out_dir / ATTESTATIONS_NAME, out_dir / SVR_NAME]
    atomic_write_bytes(written[0], "".join(line + "\n" for line in lines).encode("utf-8"))
    atomic_write_bytes(written[1], canonical_json(verification_result(subjects, properties, now)) + b"\n")
    return written
