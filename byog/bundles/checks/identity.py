"""What ran: each pair's launch difference, the stock baseline, and the candidate's commit.

``pairs``: every pair's difference (``byog.analysis.pair_diff``) from the servers' records, what
vLLM resolved first, one line per pair ("candidate differs from baseline in: --enforce-eager:
enforce_eager false→true, compilation_config.mode 2→0, +9 derived"). A difference in hardware,
GPUs, weights or tokenizer fails unless the plan's pair declares it, and so does a digest its own
per-file hashes deny; under a policy, any difference ``pairs_may_differ_in`` does not cover fails,
and so does a baseline whose code or image is not ``stock``. A side whose resolved config or
identity is unknown makes the pair "unknown: cannot check", which any such policy fails.

``identity``: no server's recorded identity contradicts itself (``byog.analysis.identity_consistency``:
commit and its source, installed wheel and the image's labels, every node and rank 0).

``commit``: under ``--for OWNER/REPO#N@SHA`` or ``--for OWNER/REPO@SHA`` every candidate's recorded
commit (rank 0's and every node's) must be that commit (``byog.schemas.commits.same_commit``). A
released build records no commit: "not bound to a commit", which fails when the policy sets
``require_bound_candidates``.
"""

from __future__ import annotations

from pydantic import ValidationError

from byog.analysis.identity_consistency import contradictions
from byog.analysis.launch_diff import ALWAYS_SAME, NOT_RECORDED, install_label, unrecorded
from byog.analysis.pair_diff import PairDiff, compare_pair, pair_line
from byog.analysis.resolved_diff import covered
from byog.bundles.checks.base import Found, Skipped, VerifyContext, check, counted
from byog.core.errors import CheckFailed, UsageError
from byog.schemas.commits import same_commit
from byog.schemas.env import EnvRecord
from byog.schemas.migrate import migrate
from byog.schemas.plan import ComparisonPair, Plan
from byog.schemas.policy import Policy, Stock
from byog.schemas.server import ServerIdentity, ServerRecord


def recorded_plan(ctx: VerifyContext) -> Plan:
    data = ctx.parsed.get("plan.yaml")
    try:
        return Plan.model_validate(migrate("plan", data, label="plan.yaml") if isinstance(data, dict) else data)
    except (ValidationError, UsageError):
        raise CheckFailed("plan.yaml is not a valid plan") from None


def recorded_server(ctx: VerifyContext, name: str) -> ServerRecord:
    path = f"servers/{name}/server.json"
    if path not in ctx.parsed:
        raise CheckFailed(f"server '{name}' has no {path}, so its launch cannot be compared")
    data = ctx.parsed[path]
    try:
        return ServerRecord.model_validate(migrate("server", data, label=path) if isinstance(data, dict) else data)
    except (ValidationError, UsageError):
        raise CheckFailed(f"{path} is not a valid server record") from None


def unlaunched(ctx: VerifyContext, name: str) -> bool:
    """No file of the server at all: one byog chose not to launch (the candidate of a numerics baseline
    whose distributions are flat), not a record left out; a server with any file but its server.json is not."""
    prefixes = tuple(f"{top}/{name}/" for top in ("servers", "bench", "evals", "numerics"))
    return not any(n.startswith(prefixes) or n == f"conformance/{name}.json" for n in ctx.names)


def _host(ctx: VerifyContext) -> EnvRecord:
    try:
        return EnvRecord.model_validate(ctx.parsed.get("env.json") or {})
    except ValidationError:
        return EnvRecord()


def derived_lines(pair: ComparisonPair, diff: PairDiff) -> list[str]:
    """Every derived difference of a pair, under its cause (the report folds them)."""
    return [
        f"{pair.candidate} vs {pair.baseline}, {g.key}: {c.shown(c.key.removeprefix('config.'))}"
        for g in diff.groups
        for c in g.derived
    ]


def pair_failures(pair: ComparisonPair, diff: PairDiff, policy: Policy | None) -> list[str]:
    """Why a pair is unfair: without a policy, contradictions and undeclared hardware/model differences."""
    failures = list(diff.contradictions)
    if diff.unknown and policy is not None and (policy.pairs_may_differ_in is not None or policy.stock is not None):
        failures.append(f"{pair.candidate} vs {pair.baseline}: unknown: cannot check: {'; '.join(diff.unknown)}")
    # a side that recorded nothing is unknown (above, or "records no ... identity" below), not different
    facts = [(key, label) for key, label in diff.facts() if NOT_RECORDED not in label]
    kinds = [label for key, label in facts if key in ALWAYS_SAME and not covered(key, pair.differs_in)]
    if kinds:
        failures.append(
            f"{pair.candidate} and {pair.baseline} differ in {', '.join(kinds)}, which the plan's pair does not "
            "declare: that compares machines or models, not implementations"
        )
    allowed = policy.pairs_may_differ_in if policy is not None else None
    if allowed is not None:
        refused = [label for key, label in facts if not covered(key, allowed)]
        if refused:
            failures.append(
                f"{pair.candidate} differs from {pair.baseline} in {'; '.join(dict.fromkeys(refused))}, "
                "which the policy's pairs_may_differ_in does not allow"
            )
        blind = [d.key for d in diff.identity if unrecorded(d)]
        if blind and not diff.unknown:
            failures.append(f"{pair.candidate} or {pair.baseline} records no {', '.join(blind)} identity to compare")
    return failures


def _digest_matches(digest: str, allowed: list[str]) -> bool:
    tail = digest.rsplit("@", 1)[-1]
    return any(tail == item.rsplit("@", 1)[-1] for item in allowed)


def stock_failure(name: str, record: ServerRecord, stock: Stock) -> str | None:
    """Why a baseline is not what the policy calls stock, or None when it is."""
    vllm = record.identity.vllm if record.identity is not None else None
    if stock.vllm_versions is not None and (vllm is None or vllm.version not in stock.vllm_versions):
        found = vllm.version if vllm is not None else "no recorded version"
        return f"baseline '{name}' runs vLLM {found}, not a stock version ({', '.join(stock.vllm_versions)})"
    if stock.commits is not None:
        commit = (vllm.commit if vllm is not None else None) or ""
        if not any(same_commit(commit, allowed.lower()) for allowed in stock.commits):
            return f"baseline '{name}' runs commit {commit or '(none recorded)'}, not a stock commit"
        install = vllm.install if vllm is not None else None
        git = install.git if install is not None and install.kind in ("editable", "directory") else None
        if install is not None and git is not None and (git.dirty is not False or git.error):
            return (
                f"baseline '{name}' runs {install_label(record.identity)}: a source tree with changes is not "
                "the stock commit it was built from"
            )
    if stock.image_digests is not None:
        digests = record.repo_digests or record.image_digests
        if not any(_digest_matches(d, stock.image_digests) for d in digests):
            return f"baseline '{name}' runs image {', '.join(digests) or '(none)'}, not a stock image digest"
    return None


@check("pairs", requires=("schemas",))
def pairs_are_fair(ctx: VerifyContext) -> Found:
    plan = recorded_plan(ctx)
    pairs = plan.comparison_pairs
    if not pairs:
        raise Skipped("the plan has one server: no pair to compare")
    host = _host(ctx)
    lines, failures, derived = [], [], []
    for pair in pairs:
        idle = [name for name in (pair.candidate, pair.baseline) if unlaunched(ctx, name)]
        if idle:
            lines.append(f"{pair.candidate} vs {pair.baseline}: not compared, '{idle[0]}' was not launched")
            continue
        names = (pair.candidate, pair.baseline)
        diff = compare_pair(names, (recorded_server(ctx, pair.candidate), recorded_server(ctx, pair.baseline)), host)
        lines.append(pair_line(pair, diff))
        derived += derived_lines(pair, diff)
        failures += pair_failures(pair, diff, ctx.policy)
    stock = ctx.policy.stock if ctx.policy is not None else None
    if stock is not None:
        for baseline in dict.fromkeys(pair.baseline for pair in pairs if not unlaunched(ctx, pair.baseline)):
            why = stock_failure(baseline, recorded_server(ctx, baseline), stock)
            if why:
                failures.append(why)
    details = {"pairs": lines, "derived": derived, "failed": failures}
    if failures:
        return Found(counted(failures, "pair problems"), failed=True, details=details)
    return Found("; ".join(lines), details=details)


@check("identity", requires=("schemas",))
def identity_is_consistent(ctx: VerifyContext) -> Found:
    plan = recorded_plan(ctx)
    names = [name for name in plan.servers if not unlaunched(ctx, name)]
    found = [sentence for name in names for sentence in contradictions(name, recorded_server(ctx, name))]
    details = {"failed": found}
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        return Found(f"{found[0]}{more}", failed=True, details=details)
    return Found(f"every server's recorded identity agrees with itself ({len(names)} servers)", details=details)


def _commits(record: ServerRecord) -> list[str | None]:
    """The commit rank 0 and each node (or the one server) recorded; None where a build names none."""
    rank0 = [record.identity] if record.identity is not None or not record.nodes else []
    identities: list[ServerIdentity | None] = [*rank0, *(n.identity for n in record.nodes or [])]
    return [i.vllm.commit if i is not None and i.vllm is not None else None for i in identities]


@check("commit", requires=("schemas",))
def bound_to_commit(ctx: VerifyContext) -> Found:
    plan = recorded_plan(ctx)
    measured = {name: _commits(recorded_server(ctx, name)) for name in plan.candidates if not unlaunched(ctx, name)}
    said = [f"{name}: {', '.join(dict.fromkeys(c or 'no commit' for c in found))}" for name, found in measured.items()]
    head = ctx.subject_for.commit if ctx.subject_for is not None else None
    details = {"measured": said, "head": [head] if head else []}
    if head is None:
        raise Skipped(
            f"no --for OWNER/REPO#N@SHA or OWNER/REPO@SHA given; measured {'; '.join(said) or 'no candidate'}"
        )
    whose = "the pull request's head" if ctx.subject_for is not None and ctx.subject_for.pr is not None else "commit"
    for name, commits in measured.items():
        for commit in commits:
            if commit is not None and not same_commit(commit, head):
                return Found(
                    f"candidate '{name}' ran commit {commit}, not {whose} {head}", failed=True, details=details
                )
    unbound = [name for name, commits in measured.items() if None in commits]
    if unbound:
        refused = ctx.policy is not None and ctx.policy.require_bound_candidates
        verdict = "the policy requires one" if refused else "allowed: no policy requires one"
        return Found(
            f"candidate {', '.join(repr(n) for n in unbound)} is a released build: not bound to a commit "
            f"({verdict}); {whose} {head}",
            failed=refused,
            details=details,
        )
    return Found(f"every candidate ran {whose} {head}", details=details)
