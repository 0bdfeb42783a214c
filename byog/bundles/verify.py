"""``byog verify BUNDLE``: nothing in a bundle is parsed before its signer is known.

Order (``byog.bundles.checks`` registers the checks; docs/bundles.md explains each):
1. **archive**: the gate members (manifest, its signature, signer.json: byog writes them first)
   are read and vetted as the archive streams by, kept in memory, nothing written; the pass stops
   at the first member after them, and at the first that breaks byog's order or header shape;
2. **manifest**, **signature**: before the signer is known, verify reads only the manifest
   (size-capped, bounded JSON, canonical) and checks the signature (at most 8 KiB) against the
   allowed signers;
3. the gate: the signer is trusted when the signature check passed, or when the bundle is
   unsigned and ``--allow-unsigned`` was given. Otherwise every later check is listed as
   "not checked: untrusted signer", nothing more of the bundle is read (not one more byte is
   inflated) and nothing is written to disk; a trusted bundle is then read through and extracted
   into a private temp dir (a second pass that must find the same gate members), every member
   hashed as it streams by (**hashes**);
4. **subject** (``--for``): the signed manifest names what the bundle is for;
5. the content checks (**bounds**, **predicate**, **schemas**, **plan**, **summary**, **report**, **policy**,
   **claims**) run in a forked child under memory and CPU limits (``byog.bundles.isolate``),
   after the bounds check has held every file to its caps (``byog.bundles.bounds``).

A bundle whose manifest is not its first member (one packed by an older byog, all names sorted)
cannot have its signature checked before the rest is read: it is refused in one sentence, and read
only with ``--allow-unsigned`` (its signature, when it has one, is still checked).

``--allow-unsigned`` applies to unsigned bundles only: a signature that is present but invalid
or by an unknown key is a failure, and gates the content checks like any untrusted signer. An
unsigned bundle checked this way says so in the signature line, in the verdict ("content
checked without a trusted signer") and in ``--json`` (``"trust": "unsigned"``).

Exit 0 when no check failed, 1 otherwise (a hostile bundle, whatever it does, fails a check:
slowness and memory included), 2 for usage errors (a missing file, a bad --policy or --claims),
3 only for what this machine lacks (e.g. ssh-keygen for a trusted signer's security key).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from byog.bundles.archive import UnsafeBundle
from byog.bundles.bounds import CAPS, Caps, size_cap
from byog.bundles.checks import CHECKS, Check, CheckResult, VerifyContext, run_one
from byog.bundles.checks.recompute import derived_summary
from byog.bundles.claims_in import load_yaml_model
from byog.bundles.comment import render_comment_report, verify_summary_lines
from byog.bundles.isolate import ChildLimits, run_isolated
from byog.bundles.pack import BUNDLE_NAME
from byog.bundles.parts import find_part0, is_part, join_parts, stem_of
from byog.bundles.unpack import Extracted, Limits
from byog.bundles.verify_events import (
    ChildEvent,
    Comment,
    Finished,
    FirstScreen,
    MachineLacks,
    RenderFailed,
    Reproduced,
    Started,
    Written,
    parse_events,
)
from byog.core.errors import CheckFailed, EnvironmentProblem, UsageError
from byog.core.io import atomic_write_text
from byog.core.paths import MANIFEST_NAME, SIGNATURE_NAME, SIGNER_NAME
from byog.core.safe_text import json_safe, one_line
from byog.report.context import ReportInputs, ReproductionView, reproduction_view
from byog.report.markdown import render_report
from byog.report.plots import write_plots
from byog.schemas.claims import ClaimsFile
from byog.schemas.manifest import BundleSubject, subject_arg
from byog.schemas.policy import Policy
from byog.schemas.reproduction import ReproductionRecord
from byog.schemas.server import ServerRecord

Trust = Literal["signed", "unsigned", "untrusted"]
UNTRUSTED = "not checked: untrusted signer"
CONTENT_LIBRARIES = ("numpy", "pyarrow", "pyarrow.parquet")  # what the content checks read with
GATE_MEMBERS = frozenset({MANIFEST_NAME, SIGNATURE_NAME, SIGNER_NAME})  # all the ungated checks read (size-capped)


@dataclass
class VerifyReport:
    bundle: str
    results: list[CheckResult] = field(default_factory=list)
    signer: str | None = None
    render_error: str | None = None  # every check passed, but the comment or report could not be rendered
    trust: Trust = "untrusted"
    isolated: bool = True  # the content checks ran in a limited child
    comment: str | None = None  # the PR comment, when asked for and every check passed
    written: list[str] = field(default_factory=list)  # report files written (report_to), when every check passed
    reproduction: ReproductionView | None = None  # its reproduction.json, read by the child (want_reproduction)
    first_screen: list[str] = field(default_factory=list)  # setup and warning lines, where the summary recomputed

    @property
    def verified(self) -> bool:
        return bool(self.results) and all(result.ok for result in self.results)

    @property
    def details(self) -> dict[str, Any]:
        """Per-check extras (every claim's outcome), and why a render failed: verify --json's "details"."""
        found: dict[str, Any] = {r.name: r.details for r in self.results if r.details is not None}
        return found | ({"render_error": self.render_error} if self.render_error is not None else {})

    @property
    def failures(self) -> list[str]:
        return [f"{r.name}: {r.message}" for r in self.results if r.status == "fail"]

    def as_json(self) -> dict[str, Any]:
        """Valid JSON whatever the bundle held (json_safe: no NaN, no lone surrogates)."""
        document: dict[str, Any] = json_safe(
            {
                "bundle": self.bundle,
                "verified": self.verified,
                "signer": self.signer,
                "trust": self.trust,
                "content_isolated": self.isolated,
                "checks": [{"name": r.name, "status": r.status, "message": r.message} for r in self.results],
                "details": self.details,
                "first_screen": self.first_screen,
            }
        )
        return document

    def verdict(self) -> str:
        if not self.verified:
            return f"not verified ({len(self.failures)} check(s) failed)"
        if self.trust == "unsigned":
            return "verified, UNSIGNED: content checked without a trusted signer"
        return "verified"


def _read_plan(path: Path | None) -> bytes | None:
    """--plan PATH: the plan file's bytes, within plan.yaml's size cap."""
    if path is None:
        return None
    if not path.is_file():
        raise UsageError(f"plan file {path} does not exist")
    cap = size_cap("plan.yaml") or CAPS.max_yaml_doc_bytes
    if path.stat().st_size > cap:
        raise UsageError(f"plan file {path} is over {cap // 1024} KiB, the cap of a bundle's plan.yaml")
    return path.read_bytes()


def load_policy(path: Path | None) -> Policy | None:
    """A maintainer's --policy file, read as ``byog verify`` reads it."""
    policy: Policy | None = load_yaml_model(path, Policy, "policy")
    return policy


def _write_report(ctx: VerifyContext, out_dir: Path, inputs: ReportInputs | None) -> list[str]:
    """report.md and the plots of a verified bundle, from the recomputed summary, into ``out_dir``."""
    summary = derived_summary(ctx)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = out_dir / "report.md"
    atomic_write_text(report, render_report(ctx.run_dir, summary, inputs))
    return [str(report), *(str(p) for p in write_plots(ctx.run_dir, summary, out_dir / "plots"))]


def _reproduction_event(ctx: VerifyContext) -> Reproduced:
    """The bundle's reproduction.json as the report shows it, from the child (validated, within bounds)."""
    view = reproduction_view(ctx.run_dir)
    if view is None:
        return Reproduced(record=None)
    return Reproduced(
        record=view.record.model_dump(mode="json"),
        signer_fingerprint=view.signer_fingerprint,
        servers=[s.model_dump(mode="json") for s in view.servers],
    )


def _view_of(event: Reproduced) -> ReproductionView | None:
    """The reproduction the child read, validated again here: the parent trusts no document it did not check."""
    if event.record is None:
        return None
    return ReproductionView(
        record=ReproductionRecord.model_validate(event.record),
        signer_fingerprint=event.signer_fingerprint,
        principal=None,
        servers=tuple(ServerRecord.model_validate(s) for s in event.servers),
    )


@dataclass
class ContentPhase:
    """What the content checks found in the child, and what it rendered once they all passed."""

    isolated: bool  # False where fork does not exist: the checks ran in this process, without limits
    results: list[CheckResult] = field(default_factory=list)
    comment: str | None = None
    first_screen: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    reproduction: ReproductionView | None = None
    render_error: str | None = None


def _content_phase(
    ctx: VerifyContext,
    checks: list[Check],
    status: dict[str, Any],
    want_comment: bool,
    limits: ChildLimits | None,
    report_to: Path | None = None,
    report_inputs: ReportInputs | None = None,
    want_reproduction: bool = False,
) -> ContentPhase:
    """Run the content checks in the limited child; what they found, and what was rendered (or read:
    the bundle's reproduction, when asked for) once they all passed."""

    def work(emit: Callable[[dict[str, Any]], None]) -> None:
        def send(event: ChildEvent) -> None:
            emit(json_safe(event.model_dump()))

        try:
            for item in checks:
                send(Started(name=item.name))
                result = run_one(item, ctx, status)
                send(
                    Finished(
                        name=result.name, status=result.status, message=one_line(result.message), details=result.details
                    )
                )
            passed = all(status.get(item.name) != "fail" for item in checks)
            if status.get("summary") == "pass":
                # the setup and warnings of a bundle whose summary recomputes, whatever else failed; a record
                # they cannot be read from leaves them out (the checks above already said what failed)
                with contextlib.suppress(Exception):
                    send(FirstScreen(lines=[one_line(x, 400) for x in verify_summary_lines(ctx)]))
            try:
                if want_comment and passed:
                    send(Comment(text=render_comment_report(ctx)))
                if report_to is not None and passed:
                    send(Written(files=_write_report(ctx, report_to, report_inputs)))
                if want_reproduction and passed:
                    send(_reproduction_event(ctx))
            except Exception as err:  # any failure is said in one line by the caller, never a traceback
                send(RenderFailed(message=one_line(f"{type(err).__name__}: {err}", 300)))
        except EnvironmentProblem as err:
            send(MachineLacks(message=str(err)))

    outcome = run_isolated(work, limits, preload=CONTENT_LIBRARIES)
    phase = ContentPhase(isolated=outcome.isolated)
    started = _read_events(parse_events(outcome.events), phase)
    if outcome.stopped is not None:
        _fail_unfinished(checks, phase.results, started, outcome.stopped)
    return phase


def _read_events(events: Iterable[ChildEvent], phase: ContentPhase) -> str | None:
    """The child's events into ``phase``; returns the check that started and never finished (None: none)."""
    started: str | None = None
    for event in events:
        if isinstance(event, Started):
            started = event.name
        elif isinstance(event, Finished):
            phase.results.append(event.result())
            started = None
        elif isinstance(event, Comment):
            phase.comment = event.text
        elif isinstance(event, FirstScreen):
            phase.first_screen = event.lines
        elif isinstance(event, Written):
            phase.written = event.files
        elif isinstance(event, Reproduced):
            try:
                phase.reproduction = _view_of(event)
            except ValidationError as err:
                phase.render_error = one_line(f"reproduction.json: {err.errors()[0]['msg']}", 300)
        elif isinstance(event, RenderFailed):
            phase.render_error = event.message
        elif isinstance(event, MachineLacks):
            raise EnvironmentProblem(event.message)
    return started


def _fail_unfinished(checks: list[Check], results: list[CheckResult], started: str | None, stopped: str) -> None:
    """The child stopped (``stopped`` says how): the check it was in fails, those after it are skipped."""
    done = {r.name for r in results}
    for item in checks:
        if item.name in done:
            continue
        if item.name == started or started is None:
            results.append(CheckResult(item.name, "fail", f"could not be checked: the checking process {stopped}"))
            started = item.name
        else:
            results.append(CheckResult(item.name, "skip", f"not checked: {started} did not finish"))


def _refuse_missing(bundle: Path, allowed_signers: Path | None) -> None:
    """A usage error for a bundle path that is no file (a run directory says how to pack it) or missing signers."""
    if bundle.is_dir():
        packed = bundle / BUNDLE_NAME
        then = (
            f"`byog verify {packed}`"
            if packed.is_file()
            else f"`byog bundle pack {bundle}`, then `byog verify {packed}`"
        )
        what = "a run directory" if (bundle / "plan.yaml").is_file() else "a directory"
        raise UsageError(f"{bundle} is {what}, not a bundle: {then}")
    if not bundle.is_file():
        raise UsageError(f"bundle {bundle} does not exist")
    if allowed_signers is not None and not allowed_signers.is_file():
        raise UsageError(f"allowed signers file {allowed_signers} does not exist")


def _trust(status: Mapping[str, object], ctx: VerifyContext) -> Trust:
    """Signed when the signature check passed; unsigned when the user allowed that; else untrusted."""
    if status.get("signature") == "pass":
        return "signed"
    return "unsigned" if ctx.unsigned_allowed else "untrusted"


def _archive_pass(names: Sequence[str], *, whole: bool) -> CheckResult:
    """The archive check's pass: the whole archive read, or only the gate members before the signer is trusted."""
    if whole:
        return CheckResult("archive", "pass", f"{len(names)} members, all regular files with safe names")
    return CheckResult("archive", "pass", f"read only {', '.join(names)}: nothing more before the signer is trusted")


def verify_bundle(
    bundle: Path,
    *,
    allowed_signers: Path | None = None,
    policy: Path | None = None,
    claims: Path | None = None,
    allow_unsigned: bool = False,
    subject_for: str | BundleSubject | None = None,
    plan: Path | None = None,
    limits: Limits = Limits(),
    caps: Caps = CAPS,
    child_limits: ChildLimits | None = None,
    want_comment: bool = False,
    report_to: Path | None = None,
    report_inputs: ReportInputs | None = None,
    want_reproduction: bool = False,
) -> VerifyReport:
    """Run every check; never raises for a bad bundle (the report says why), only for bad usage or environment."""
    _refuse_missing(bundle, allowed_signers)
    policy_model = load_yaml_model(policy, Policy, "policy")
    claims_model = load_yaml_model(claims, ClaimsFile, "claims")
    wanted = subject_arg(subject_for)
    plan_given = _read_plan(plan)
    report = VerifyReport(bundle=str(bundle))
    gate_results: list[CheckResult] = []  # what held before the whole archive was read
    try:
        # Before the signer is trusted only the gate members are read, and nothing is written to disk.
        with Extracted(bundle, limits, gate_only=True, keep=GATE_MEMBERS, legacy_order=allow_unsigned) as extracted:
            assert extracted.root is not None
            ctx = VerifyContext(
                bundle=bundle,
                root=extracted.root,
                names=extracted.names,
                digests=extracted.digests,
                held=extracted.held,
                allowed_signers=allowed_signers,
                policy=policy_model,
                claims=claims_model,
                allow_unsigned=allow_unsigned,
                subject_for=wanted,
                caps=caps,
                plan_given=plan_given,
                plan_label=str(plan) if plan is not None else "the given plan",
            )
            status: dict[str, Any] = {"archive": "pass"}
            ungated = [item for item in CHECKS if not item.gated]
            results = [run_one(item, ctx, status) for item in ungated]
            report.trust = _trust(status, ctx)
            gated = [item for item in CHECKS if item.gated]
            if report.trust == "untrusted":
                results.insert(0, _archive_pass(extracted.names, whole=False))
                results += [CheckResult(item.name, "skip", UNTRUSTED) for item in gated]
            else:
                gate_results, report.signer = list(results), ctx.signer
                extracted.extract()
                ctx = replace(ctx, names=extracted.names, digests=extracted.digests, held=extracted.held)
                results.insert(0, _archive_pass(extracted.names, whole=True))
                results += [run_one(item, ctx, status) for item in gated if not item.isolated]
                content = _content_phase(
                    ctx,
                    [item for item in gated if item.isolated],
                    status,
                    want_comment,
                    child_limits,
                    report_to,
                    report_inputs,
                    want_reproduction,
                )
                results += content.results
                report.isolated, report.comment, report.written = content.isolated, content.comment, content.written
                report.first_screen = content.first_screen
                report.reproduction, report.render_error = content.reproduction, content.render_error
            report.results = results
            report.signer = ctx.signer
    except UnsafeBundle as err:
        # a refusal of the whole archive after the signature held still shows that it held
        report.results = [CheckResult("archive", "fail", str(err)), *gate_results]
    return report


def verify_bundle_set(bundles: list[Path], **options: Any) -> VerifyReport:
    """``verify_bundle`` of one bundle, or of a multi-part bundle given as its parts (or as any one of
    them: part 0, the signed part manifest, finds the others beside it; ``byog.bundles.parts``).

    The part manifest's signature is checked before any part is read, each part's size and sha256
    before it is used; a part missing, swapped or altered fails the "parts" check, which names it."""
    if len(bundles) == 1 and not is_part(bundles[0]):
        return verify_bundle(bundles[0], **options)
    limits: Limits = options.get("limits", Limits())
    allowed = options.get("allowed_signers")
    if allowed is not None and not allowed.is_file():
        raise UsageError(f"allowed signers file {allowed} does not exist")
    zero, _ = find_part0(bundles)
    with tempfile.TemporaryDirectory(prefix="byog-parts-") as folder:
        joined = Path(folder) / f"{stem_of(zero)}.tar.gz"
        try:
            signer, count = join_parts(bundles, allowed, max_archive_bytes=limits.max_bundle_bytes, out=joined)
        except CheckFailed as err:
            return VerifyReport(bundle=str(zero), results=[CheckResult("parts", "fail", str(err))])
        report = verify_bundle(joined, **options)
    report.bundle = str(zero)
    held = f"{count} parts, each the one named by the part manifest {signer.principal} signed"
    report.results.insert(0, CheckResult("parts", "pass", held))
    return report
