"""``weights``: what each server's weights say of themselves, beyond byog's own digests.

A Hugging Face cache snapshot: its commit, and each file held to the cache's blob for it
(``identity_probe.hub_snapshot``); a file whose bytes are not the blob's etag fails: those are not
the weights of that revision. An OMS ``model.sig`` in the folder: checked offline
(``byog.bundles.model_sig``) against the recorded file digests and the policy's ``model_signers``;
``require_model_signature`` fails a pair whose two sides do not both carry a valid signature by
the same signer.
"""

from __future__ import annotations

from byog.bundles.checks.base import Found, Skipped, VerifyContext, check, counted
from byog.bundles.checks.identity import recorded_plan, recorded_server, unlaunched
from byog.bundles.model_sig import SignatureCheck, check_signature
from byog.schemas.policy import ModelSigner
from byog.schemas.server import ModelFilesIdentity, ServerRecord

SHOWN = 3


def _snapshot_line(name: str, weights: ModelFilesIdentity) -> tuple[str, list[str]]:
    snap = weights.hub_snapshot
    assert snap is not None
    named = [ref for ref, commit in snap.refs.items() if commit == snap.commit]
    where = f"HF {snap.repo_id}@{(snap.commit or '')[:12]}" + (f" (refs {', '.join(named)})" if named else "")
    tail = f"; {snap.no_hash.count} without one ({', '.join(snap.no_hash.names[:SHOWN])})" if snap.no_hash.count else ""
    line = f"{name}: {where}: {snap.files_matched} files match the cache's blobs{tail}"
    failures = [
        f"{name}: {path} is not the blob the HF cache holds for {snap.repo_id}@{(snap.commit or '')[:12]} "
        f"(etag {etag[:12]})"
        for path, etag in sorted(snap.mismatched.items())
    ]
    return line, failures


def _signature(weights: ModelFilesIdentity, signers: list[ModelSigner]) -> SignatureCheck | None:
    oms = weights.oms
    if oms is None or oms.signature is None:
        return None
    if oms.signature.text is None:
        return SignatureCheck("invalid", "no signer readable", oms.signature.error or "model.sig not recorded")
    ignored = set(oms.serialization.get("ignore_paths") or [])  # the paths the recorded OMS digest leaves out
    recorded = {n: sha for n, sha in {**weights.files, **oms.other_files}.items() if n.split("/")[0] not in ignored}
    return check_signature(oms.signature.text, recorded, signers)


def _weights(record: ServerRecord) -> ModelFilesIdentity | None:
    return record.identity.weights if record.identity is not None else None


@check("weights", requires=("schemas",))
def weights_say_the_same(ctx: VerifyContext) -> Found:
    plan = recorded_plan(ctx)
    policy = ctx.policy
    signers = policy.model_signers if policy is not None else []
    lines: list[str] = []
    failures: list[str] = []
    signed: dict[str, SignatureCheck | None] = {}
    for name in plan.servers:
        if unlaunched(ctx, name):
            continue
        weights = _weights(recorded_server(ctx, name))
        if weights is None:
            continue
        if weights.hub_snapshot is not None:
            line, wrong = _snapshot_line(name, weights)
            lines.append(line)
            failures += wrong
        found = signed[name] = _signature(weights, signers)
        if found is not None:
            lines.append(f"{name}: {found.line}")
    if policy is not None and policy.require_model_signature:
        for pair in plan.comparison_pairs:
            sides = [signed.get(pair.candidate), signed.get(pair.baseline)]
            by = {s.signer for s in sides if s is not None and s.status == "valid"}
            if len(by) != 1 or any(s is None or s.status != "valid" for s in sides):
                said = "; ".join(_said(n, s) for n, s in zip((pair.candidate, pair.baseline), sides, strict=True))
                failures.append(
                    f"{pair.candidate} vs {pair.baseline}: the policy requires both sides' weights to carry a valid "
                    f"signature by the same signer ({said})"
                )
    if not lines and not failures:
        raise Skipped("no server's weights are a Hugging Face cache snapshot or carry a model.sig")
    details = {"servers": lines, "failed": failures}
    if failures:
        return Found(counted(failures, "weights problems"), failed=True, details=details)
    return Found("; ".join(lines), details=details)


def _said(name: str, found: SignatureCheck | None) -> str:
    if found is None:
        return f"{name}: no model.sig"
    return f"{name}: {found.status.replace('_', ' ')}" + (f" by {found.signer}" if found.signer else "")
