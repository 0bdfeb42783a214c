"""The end of ``byog run`` (and ``byog bundle pack``): name the signer, render, seal, sign, pack.

Order matters: signer.json and report.md are part of the signed content, so they are written
first (report.md in the current format, and attestations.intoto.jsonl, where the run has one, again
under that format's rules, whichever byog derived the run); then the manifest is built over every
file, signed, and everything packed.
"""

from __future__ import annotations

import glob
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from byog.bundles.attestations import ATTESTATIONS_NAME, attestations_bytes
from byog.bundles.claims_in import take_claims
from byog.bundles.pack import BUDGET_BYTES, BUNDLE_NAME, archive_bytes, seal
from byog.bundles.parts import part0_bytes, part_name, split, stem_of
from byog.bundles.sign import SigningKey, configured_key, sign_bytes
from byog.bundles.unpack import Limits
from byog.core.errors import ByogError, CheckFailed, UsageError
from byog.core.io import atomic_write_bytes, atomic_write_json, atomic_write_text
from byog.core.paths import SIGNATURE_NAME, SIGNER_NAME, RunDir, require_run_dir
from byog.core.reporter import NullReporter, Reporter
from byog.core.settings import SIGNING_KEY_ENV
from byog.report.markdown import render_report
from byog.report.plots import write_plots
from byog.schemas.manifest import BundleSubject, subject_arg
from byog.schemas.summary import read_summary

NO_KEY_HINT = (
    f"set {SIGNING_KEY_ENV}=~/.ssh/id_ed25519, or 'key = PATH' under [signing] in ~/.config/byog/config, "
    "or git's user.signingkey with gpg.format=ssh"
)


@dataclass(frozen=True)
class Packed:
    bundle: Path  # the archive, or part 0 of a multi-part bundle
    size_bytes: int  # the archive's size (all parts together)
    signed_by: str | None  # key fingerprint
    compressed: list[str]
    notes: list[str] = field(default_factory=list)  # what packing merged (a claim given twice)
    parts: tuple[Path, ...] = ()  # a multi-part bundle: part 0 (the signed part manifest), then parts 1..N


def _write_signer(run_dir: RunDir, key: SigningKey | None) -> None:
    path = run_dir.root / SIGNER_NAME
    if key is None:
        path.unlink(missing_ok=True)
        return
    atomic_write_json(
        path,
        {"schema_version": 1, "fingerprint": key.fingerprint(), "public_key": key.public_key(), "source": key.source},
    )


def seal_and_pack(
    run_dir: RunDir,
    out: Path | None = None,
    *,
    sign: bool = True,
    key: SigningKey | None = None,
    plots: bool | None = None,
    budget_bytes: int = BUDGET_BYTES,
    subject: str | BundleSubject | None = None,
    claims: Path | None = None,
) -> Packed:
    """Raise on any problem. ``key`` None: the configured key (when ``sign``). ``plots=None`` draws
    the plots only when plots/ is missing, so packing the same run twice gives the same bytes.
    ``subject``: 'OWNER/REPO#PR' or 'OWNER/REPO@COMMIT' the bundle is for (signed in its manifest).
    ``claims``: a claims file merged into the run's claims.yaml; every claim must name a measured point."""
    subject = subject_arg(subject)
    require_run_dir(run_dir.root)
    if not run_dir.summary_json.is_file():
        raise UsageError(f"{run_dir.root} has no summary.json; run `byog derive {run_dir.root}` first")
    notes = take_claims(run_dir, read_summary(run_dir.summary_json), claims)
    key = (key or configured_key()) if sign else None
    if key is not None and not key.path.is_file():
        raise UsageError(f"signing key {key.path} (from {key.source}) does not exist")
    _write_signer(run_dir, key)
    summary = read_summary(run_dir.summary_json)
    atomic_write_text(run_dir.report_md, render_report(run_dir, summary))
    if (run_dir.root / ATTESTATIONS_NAME).is_file():
        atomic_write_bytes(run_dir.root / ATTESTATIONS_NAME, attestations_bytes(run_dir, summary))
    if plots or (plots is None and not run_dir.plots_dir.is_dir()):
        write_plots(run_dir, summary)
    out = (out or run_dir.root / BUNDLE_NAME).resolve()
    stale = set(out.parent.glob(f"{glob.escape(stem_of(out))}.part*.tar.gz"))
    sealed = seal(run_dir, exclude={out, *stale}, budget_bytes=budget_bytes, subject=subject, parts=key is not None)
    if key is not None:
        sealed.signature = sign_bytes(sealed.manifest, key)
        atomic_write_bytes(run_dir.root / SIGNATURE_NAME, sealed.signature)
    else:
        (run_dir.root / SIGNATURE_NAME).unlink(missing_ok=True)
        sealed.signature = None
    archive = archive_bytes(sealed)
    for path in stale:
        path.unlink()  # an earlier pack's parts: never mixed with this one's
    fingerprint = json.loads((run_dir.root / SIGNER_NAME).read_text())["fingerprint"] if key else None
    if len(archive) <= budget_bytes or key is None:
        atomic_write_bytes(out, archive)
        return Packed(
            bundle=out,
            size_bytes=len(archive),
            signed_by=fingerprint,
            compressed=sealed.contents.compressed,
            notes=notes,
        )
    return replace(_write_parts(out, archive, key, budget_bytes, fingerprint, sealed.contents.compressed), notes=notes)


def _write_parts(
    out: Path, archive: bytes, key: SigningKey, part_bytes: int, fingerprint: str | None, compressed: list[str]
) -> Packed:
    """The archive over budget, as a signed multi-part bundle beside ``out`` (``byog.bundles.parts``)."""
    if len(archive) > Limits().max_bundle_bytes:
        raise CheckFailed(
            f"the bundle is {len(archive) / 1e6:.1f} MB even compressed, over the "
            f"{Limits().max_bundle_bytes / 1e6:.0f} MB verify reads in any number of parts"
        )
    stem = stem_of(out)
    payload, parts = split(archive, stem, part_bytes)
    zero = out.parent / part_name(stem, 0)
    for name, data in parts:
        atomic_write_bytes(out.parent / name, data)
    atomic_write_bytes(zero, part0_bytes(payload, sign_bytes(payload, key)))
    out.unlink(missing_ok=True)  # a one-part bundle of an earlier pack
    written = (zero, *(out.parent / name for name, _ in parts))
    return Packed(bundle=zero, size_bytes=len(archive), signed_by=fingerprint, compressed=compressed, parts=written)


def describe(packed: Packed) -> str:
    size = f"{packed.size_bytes / 1e6:.2f} MB"
    if packed.parts:
        size += f" in {len(packed.parts) - 1} parts and a signed part manifest: attach every one of " + ", ".join(
            p.name for p in packed.parts
        )
    squeezed = f"; compressed to fit: {', '.join(packed.compressed)}" if packed.compressed else ""
    squeezed += "".join(f"; {note}" for note in packed.notes)
    if packed.signed_by:
        return f"bundle {packed.bundle} ({size}), signed with key {packed.signed_by}{squeezed}"
    return f"bundle {packed.bundle} ({size}), NOT signed: no signing key is configured ({NO_KEY_HINT}){squeezed}"


def finalize_run(
    run_dir: RunDir,
    reporter: Reporter = NullReporter(),
    *,
    subject: str | BundleSubject | None = None,
    claims: Path | None = None,
) -> Path | None:
    """Called at the end of ``byog run``: seal, sign when a key is configured, pack bundle.tar.gz in the run dir.

    Never fails the run: results stay in the run directory, and a problem is printed as one line
    (``byog bundle pack RUN_DIR`` retries it). Returns the bundle path, or None when none was made.
    Messages are plain text (never markup: the hint's "[signing]" must show).
    """
    try:
        packed = seal_and_pack(run_dir, sign=True, plots=True, subject=subject, claims=claims)
    except ByogError as err:
        reporter.line(f" {err}", lead="bundle not made:", style="error")
        return None
    reporter.line(describe(packed), style="ok" if packed.signed_by else "warn")
    return packed.bundle
