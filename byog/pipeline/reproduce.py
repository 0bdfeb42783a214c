"""``byog reproduce BUNDLE``: a maintainer re-runs part of a contributor's bundle on their own
hardware and writes a signed reproduction beside it.

1. verify the bundle (a copy of its bytes, so what is verified is what is reproduced): a bundle
   whose numbers do not recompute is not worth a GPU-hour;
2. choose the points: ``--points`` names them, otherwise ``--sample`` of them are drawn by the
   bundle's manifest hash (``byog.analysis.reproduction.sample_points``) among the points valid
   on every server that ran them; and the servers: ``--server``, otherwise those that ran them;
3. build the reproduction's plan (``byog.plans.subset``) for those points and servers, with a
   few eval items each: from the bundle only its measurement (workloads, vetted ``vllm serve``
   flags and numerics changes, byog's eval tasks and their sampling settings), from the
   maintainer everything about where and how servers run (runtime, image, hosts, environment,
   model path); say what of the bundle it leaves out, each with the option that keeps it;
   ``--dry-run`` stops here and says what would run and send;
4. run it like ``byog run`` into a reproduction run directory (resumable), each baseline of a
   numerics comparison before its candidates, and derive its summary;
5. compare (``byog.analysis.reproduction``), write ``reproduction.json``, and seal the directory
   into ``<bundle>.reproduction.tar.gz``, signed with the maintainer's key: itself a bundle that
   ``byog verify`` checks, and that ``byog report BUNDLE`` shows beside the original.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from byog.analysis import hardware
from byog.analysis.reproduction import (
    DEFAULT_EVAL_MIN_AGREEMENT,
    combine,
    compare_eval_items,
    compare_numerics,
    compare_point,
    default_rule,
    for_the_family,
    sample_points,
)
from byog.analysis.reproduction_defaults import DEFAULT_EVAL_ITEMS, DEFAULT_RUN_NOISE, DEFAULT_SAMPLE
from byog.analysis.summary import derive_summary, plan_of
from byog.bundles.finalize import Packed, seal_and_pack
from byog.bundles.unpack import Extracted
from byog.bundles.verify import load_policy, verify_bundle
from byog.core.errors import CheckFailed, UsageError
from byog.core.io import atomic_write_json, atomic_write_text, read_json
from byog.core.paths import MANIFEST_NAME, RunDir, new_run_id
from byog.core.reporter import Reporter
from byog.core.safe_text import one_line
from byog.core.settings import runs_dir
from byog.images.fingerprint import environment_fingerprint
from byog.images.models import prepare_model
from byog.pipeline.derive import derive_and_write
from byog.pipeline.numerics import references, server_order
from byog.pipeline.run import run_server, server_work_done
from byog.pipeline.signals import sigterm_as_interrupt
from byog.plans.expand import expand_plan
from byog.plans.numerics_roles import check_stock_roles, resolve_control
from byog.plans.subset import Dropped, Overrides, Selection, dropped, reproduction_plan
from byog.plans.tasks import get_task
from byog.plans.tiers import tiered_plan_yaml
from byog.runtimes.launch import redact_env
from byog.runtimes.record import utc_now
from byog.schemas.env import EnvRecord
from byog.schemas.evals import EvalItemRow
from byog.schemas.plan import Plan
from byog.schemas.reproduction import (
    REPRODUCTION_NAME,
    EvalReproduction,
    Hardware,
    OriginalBundle,
    ReproductionRecord,
)
from byog.schemas.summary import Summary
from byog.schemas.tables import read_rows

SUFFIX = ".reproduction"
DROPPED_HEADER = "byog reproduce does not use these settings of the bundle (each with the option that keeps it):"
_SIGNER = re.compile(r"^(?P<principal>.*) \((?P<fingerprint>SHA256:[A-Za-z0-9+/=]+)\)$")


@dataclass
class ReproduceOptions:
    points: list[str] = field(default_factory=list)  # named; empty: sampled
    sample: int = DEFAULT_SAMPLE
    servers: list[str] = field(default_factory=list)  # empty: every server that ran the chosen points
    eval_items: int = DEFAULT_EVAL_ITEMS
    overrides: Overrides = field(default_factory=Overrides)
    run_noise: float = DEFAULT_RUN_NOISE
    run_dir: Path | None = None  # default: runs/reproduce-<id>/ (an existing one resumes)
    out: Path | None = None  # default: <bundle>.reproduction.tar.gz beside the bundle
    allowed_signers: Path | None = None
    policy: Path | None = None  # the maintainer's policy: verify applies it, its image digests may run
    allow_unsigned: bool = False
    data_dir: Path | None = None
    sign: bool = True


@dataclass(frozen=True)
class Planned:
    """What a reproduction would run: the plan as this machine runs it, in launch order."""

    plan: Plan
    points: list[str]
    servers: list[str]  # launch order
    manifest_sha256: str
    dropped: list[Dropped] = field(default_factory=list)  # what the bundle had that this reproduction leaves out
    why: str = ""  # how the points were chosen
    left_out: list[str] = field(default_factory=list)  # the bundle's points, items and interleaving not re-run
    warnings: list[str] = field(default_factory=list)  # what keeps the reproduction from comparing, and its remedy


def dropped_shown(planned: Planned) -> list[dict[str, str | None]]:
    """What the reproduction leaves out of the bundle, as printed: secret env values redacted."""
    out: list[dict[str, str | None]] = []
    for item in planned.dropped:
        value = item.value
        if item.key is not None and redact_env({item.key: value})[item.key] != value:
            value = "<redacted>"
        shown = f"{item.key}={value}" if item.key is not None else value
        out.append({"server": item.server, "what": item.what, "value": shown, "keep": item.keep(value)})
    return out


def dropped_lines(planned: Planned) -> list[str]:
    """One line for each thing the bundle had that the reproduction will not use, with the option that keeps it."""
    lines = []
    for item in dropped_shown(planned):
        where = f"server '{item['server']}'" if item["server"] else "the plan"
        how = f"keep it: {item['keep']}" if item["keep"] else "no option keeps it"
        lines.append(one_line(f"{where}: {item['what']} {item['value']} ({how})"))
    return lines


@dataclass(frozen=True)
class Reproduced:
    record: ReproductionRecord
    run_dir: Path
    packed: Packed


def stem(bundle: Path) -> Path:
    """bundle.tar.gz -> bundle (the reproduction goes beside it: bundle.reproduction.tar.gz)."""
    return bundle.parent / bundle.name.removesuffix(".tar.gz").removesuffix(".tgz")


@contextmanager
def _verified_copy(bundle: Path, opts: ReproduceOptions) -> Iterator[tuple[Path, str | None, str | None]]:
    """A private copy of the bundle, verified: (copy, signer principal, signer fingerprint)."""
    if not bundle.is_file():
        raise UsageError(f"bundle {bundle} does not exist")
    with tempfile.TemporaryDirectory(prefix="byog-reproduce-") as tmp:
        copy = Path(tmp) / "bundle.tar.gz"
        shutil.copyfile(bundle, copy)
        report = verify_bundle(
            copy, allowed_signers=opts.allowed_signers, policy=opts.policy, allow_unsigned=opts.allow_unsigned
        )
        if not report.verified:
            raise CheckFailed(
                f"{bundle} does not verify ({'; '.join(report.failures)}); byog reproduce re-runs only a "
                "bundle that verifies (`byog verify` says why)"
            )
        match = _SIGNER.match(report.signer or "")
        yield copy, (match.group("principal") if match else None), (match.group("fingerprint") if match else None)


def _choose_points(plan: Plan, summary: Summary, opts: ReproduceOptions, seed_hex: str) -> list[str]:
    ids = [p.point_id for p in expand_plan(plan)]
    if opts.points:
        unknown = [pid for pid in opts.points if pid not in ids]
        if unknown:
            raise UsageError(f"--points: no point {', '.join(unknown)} in the bundle's plan (it has {', '.join(ids)})")
        return list(dict.fromkeys(opts.points))
    if opts.sample < 0:
        raise UsageError("--sample must be 0 or more")
    measured = {
        p.point_id
        for p in summary.bench.points
        if p.metrics is not None and (not opts.servers or p.server in opts.servers)
    }
    valid = _valid_pool(plan, summary, opts)
    return sample_points(valid or [pid for pid in ids if pid in measured], seed_hex, opts.sample)


def _why(plan: Plan, summary: Summary, opts: ReproduceOptions, points: list[str]) -> str:
    if opts.points:
        return f"points named by --points: {', '.join(points)}"
    pool = _valid_pool(plan, summary, opts)
    if not pool:
        return f"drawn (--sample {opts.sample}) by the bundle's manifest hash among all measured points: none is valid"
    return (
        f"drawn (--sample {opts.sample}) by the bundle's manifest hash among the {len(pool)} point(s) valid on every "
        f"server that ran them: {', '.join(points) or 'none'}"
    )


def _valid_pool(plan: Plan, summary: Summary, opts: ReproduceOptions) -> list[str]:
    measured: dict[str, list[bool]] = {}
    for p in summary.bench.points:
        if p.metrics is not None and (not opts.servers or p.server in opts.servers):
            measured.setdefault(p.point_id, []).append(p.valid)
    return [p.point_id for p in expand_plan(plan) if measured.get(p.point_id) and all(measured[p.point_id])]


def _left_out(plan: Plan, repro: Plan, summary: Summary, points: list[str], opts: ReproduceOptions) -> list[str]:
    """What of the bundle the reproduction does not re-run, each with the option that would."""
    ids = list(dict.fromkeys(p.point_id for p in expand_plan(plan)))
    rest = [pid for pid in ids if pid not in points]
    lines = [f"{len(rest)} of {len(ids)} points: {', '.join(rest)} (--points or --sample re-runs them)"] if rest else []
    for score in summary.evals.scores:
        if score.n_items > opts.eval_items:
            lines.append(
                f"{score.n_items - opts.eval_items} of {score.n_items} items of eval {score.task} on {score.server} "
                f"(--eval-items {score.n_items} re-runs them all)"
            )
    kept = set(repro.interleaved_pairs)
    lines += [
        f"interleaving of {candidate} vs {baseline}: the bundle ran them in ABBA waves with sleep mode; the "
        "reproduction runs them one after the other"
        for candidate, baseline in plan.interleaved_pairs
        if (candidate, baseline) not in kept
    ]
    return lines


def _warnings(plan: Plan, summary: Summary, opts: ReproduceOptions, points: list[str], original: RunDir) -> list[str]:
    """A drawn point invalid on a side (nothing to compare there), and hardware unlike this machine's."""
    lines = []
    pool = _valid_pool(plan, summary, opts)
    for pid in points:
        bad = [p for p in summary.bench.points if p.point_id == pid and not p.valid]
        if bad:
            remedy = (
                f"--points {','.join(pool)} keeps only the {len(pool)} point(s) valid on every server"
                if pool
                else "no point of the bundle is valid on every server, so --points cannot pick a comparable one"
            )
            sides = "; ".join(f"{p.server}: {'; '.join(p.invalid_reasons) or 'flagged invalid'}" for p in bad)
            lines.append(
                f"point {pid} is invalid in the bundle on {', '.join(p.server for p in bad)} ({sides}): "
                f"its numbers there are not results, so the reproduction has nothing to compare them with; {remedy}"
            )
    if original.env_json.is_file():
        theirs, ours = (
            EnvRecord.model_validate(read_json(original.env_json)),
            EnvRecord.model_validate(environment_fingerprint()),
        )
        if not hardware.same_kind(theirs, ours):
            lines.append(
                f"the bundle ran on {hardware.describe(theirs)}, this machine is {hardware.describe(ours)}: ratios "
                "only (candidate / baseline is compared, absolute numbers are not)"
            )
    return lines


def _choose_servers(plan: Plan, summary: Summary, points: list[str], opts: ReproduceOptions) -> list[str]:
    if opts.servers:
        unknown = [s for s in opts.servers if s not in plan.servers]
        if unknown:
            raise UsageError(
                f"--server: no server {', '.join(unknown)} in the bundle's plan (it has {', '.join(plan.servers)})"
            )
        return [s for s in plan.servers if s in opts.servers]
    ran = {p.server for p in summary.bench.points if p.point_id in points and p.metrics is not None}
    if not points:  # evals and numerics only
        ran = {s.server for s in summary.evals.scores} | (set(references(plan)) if plan.numerics else set())
    return [s for s in plan.servers if s in ran]


def _open_run_dir(root: Path, plan: Plan) -> RunDir:
    rd = RunDir(root)
    text = tiered_plan_yaml(plan)
    if rd.plan_yaml.is_file():
        if rd.plan_yaml.read_text(encoding="utf-8") != text:
            raise UsageError(
                f"{root} holds a reproduction of other points, servers or overrides; give another --run-dir"
            )
    elif root.exists() and any(root.iterdir()):
        raise UsageError(f"{root} exists and is not a reproduction run directory; give another --run-dir")
    else:
        atomic_write_text(rd.plan_yaml, text)
    return rd


def _eval_checks(plan: Plan, original: RunDir, rd: RunDir, min_agreement: float) -> list[EvalReproduction]:
    checks = []
    for spec in plan.evals:
        task = get_task(spec.task).name
        for server in plan.servers_for(spec):
            if not (original.eval_complete(server, task) and rd.eval_complete(server, task)):
                continue
            checks.append(
                compare_eval_items(
                    server,
                    task,
                    read_rows(original.eval_items(server, task), EvalItemRow),
                    read_rows(rd.eval_items(server, task), EvalItemRow),
                    min_agreement,
                )
            )
    return checks


def _plan(original: RunDir, opts: ReproduceOptions) -> tuple[Planned, Summary]:
    """The reproduction's plan from the verified original, and the original's summary."""
    manifest_sha = hashlib.sha256((original.root / MANIFEST_NAME).read_bytes()).hexdigest()
    # the control the original ran: the platform default is read from the original's machine
    plan = resolve_control(plan_of(original), read_json(original.env_json) if original.env_json.is_file() else None)
    o_summary = derive_summary(original)  # verify has just shown it equals the shipped summary.json
    points = _choose_points(plan, o_summary, opts, manifest_sha)
    servers = _choose_servers(plan, o_summary, points, opts)
    if not servers:
        raise UsageError("nothing to reproduce: no chosen point was measured on any server")
    overrides = opts.overrides
    policy = load_policy(opts.policy)
    if policy is not None and policy.allowed_image_digests:
        overrides = replace(
            overrides, allowed_image_digests=[*overrides.allowed_image_digests, *policy.allowed_image_digests]
        )
    repro_plan = reproduction_plan(plan, overrides, Selection(points, servers, opts.eval_items))
    check_stock_roles(repro_plan)  # as byog run does: a hand-made bundle may set them up wrongly
    planned = Planned(
        repro_plan,
        points,
        server_order(repro_plan),
        manifest_sha,
        dropped(plan, repro_plan),
        why=_why(plan, o_summary, opts, points),
        left_out=_left_out(plan, repro_plan, o_summary, points, opts),
        warnings=_warnings(plan, o_summary, opts, points, original),
    )
    return planned, o_summary


def plan_reproduction(bundle: Path, opts: ReproduceOptions) -> Planned:
    """``byog reproduce --dry-run``: what would run, from the verified bundle; nothing is started or written."""
    with _verified_copy(bundle, opts) as (copy, _, _), Extracted(copy) as extracted:
        assert extracted.root is not None
        return _plan(RunDir(extracted.root), opts)[0]


def reproduce(bundle: Path, opts: ReproduceOptions, reporter: Reporter) -> Reproduced:
    started = utc_now()
    with _verified_copy(bundle, opts) as (copy, principal, fingerprint), Extracted(copy) as extracted:
        assert extracted.root is not None
        original = RunDir(extracted.root)
        planned, o_summary = _plan(original, opts)
        plan, repro_plan, points, servers = plan_of(original), planned.plan, planned.points, list(planned.plan.servers)
        manifest_sha = planned.manifest_sha256
        root = opts.run_dir or runs_dir() / f"reproduce-{new_run_id()}"
        rd = _open_run_dir(root, repro_plan)
        for warning in planned.warnings:
            reporter.line(f"⚠ {warning}")
        if planned.dropped:
            reporter.line(DROPPED_HEADER)
        for line in dropped_lines(planned):
            reporter.line(f"  {line}")
        reporter.line(
            f"byog reproduce: {len(points)} point(s) ({', '.join(points) or 'none'}) on "
            f"{', '.join(servers)}, {opts.eval_items} eval item(s) each -> {rd.root}"
        )
        if not rd.env_json.is_file():
            atomic_write_json(rd.env_json, environment_fingerprint())
        model = prepare_model(repro_plan.model)
        with sigterm_as_interrupt():
            for name in planned.servers:  # a numerics baseline before its candidates
                if server_work_done(repro_plan, name, rd):
                    reporter.line(f"{name}: every point and eval is already complete; not launched")
                    continue
                run_server(repro_plan, name, model, rd, opts.data_dir, reporter)
        r_summary = derive_and_write(rd.root)
        o_env, r_env = (EnvRecord.model_validate(read_json(p)) for p in (original.env_json, rd.env_json))
        same = hardware.same_kind(o_env, r_env)
        seed = repro_plan.seeds[0]
        checked, compared, z_scale = for_the_family(
            [
                compare_point(
                    pid,
                    servers,
                    repro_plan.comparisons,
                    (original, o_summary),
                    (rd, r_summary),
                    opts.run_noise,
                    same,
                    seed,
                )
                for pid in points
            ],
            opts.run_noise,
        )
        rule = default_rule(opts.run_noise).model_copy(update={"checks_compared": compared, "family_z_scale": z_scale})
        evals = _eval_checks(repro_plan, original, rd, DEFAULT_EVAL_MIN_AGREEMENT)
        numerics = compare_numerics(o_summary.numerics, r_summary.numerics)
        predicate_version = read_json(original.root / MANIFEST_NAME)["predicate"]["tool"]["version"]
        record = ReproductionRecord(
            original=OriginalBundle(
                bundle_sha256=hashlib.sha256(copy.read_bytes()).hexdigest(),
                manifest_sha256=manifest_sha,
                plan_name=plan.name,
                plan_sha256=hashlib.sha256(original.plan_yaml.read_bytes()).hexdigest(),
                byog_version=str(predicate_version),
                signer_fingerprint=fingerprint,
                signer_principal=principal,
            ),
            selection="named" if opts.points else "sampled",
            points_requested=points,
            overrides=opts.overrides.describe(),
            hardware=Hardware(original=hardware.describe(o_env), reproduced=hardware.describe(r_env), same=same),
            started_at=started,
            finished_at=utc_now(),
            rule=rule,
            points=checked,
            evals=evals,
            numerics=numerics,
            outcome=combine([p.outcome for p in checked] + [e.outcome for e in evals] + [n.outcome for n in numerics]),
        )
    atomic_write_json(rd.root / REPRODUCTION_NAME, record.model_dump(mode="json"))
    out = opts.out or Path(f"{stem(bundle)}{SUFFIX}.tar.gz")
    packed = seal_and_pack(rd, out, sign=opts.sign, plots=True)
    return Reproduced(record=record, run_dir=rd.root, packed=packed)
