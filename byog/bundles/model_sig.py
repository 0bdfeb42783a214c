"""A model folder's OMS signature (``model.sig``), checked offline against the policy's signers.

The probe records the file's text where the server ran (``identity_probe.model_signature``); the
bundle is hostile input, so this reads it as data, bounded: a Sigstore bundle whose DSSE envelope
carries an in-toto statement (``https://model_signing/signature/v1.0``) listing each file's
sha256. Two questions, answered apart:

- does it cover these weights? every file the signature lists must be a recorded file with the
  same sha256, and every recorded OMS file must be listed (byog's per-file record, so a folder
  that changed after signing fails);
- who signed? ``model-signing``'s own verifiers, with no network: an EC public key (its
  ``elliptic_key`` method) or a certificate chain (``certificate``) that a ``model_signers`` entry
  of the policy names. A Sigstore (keyless) signature needs the transparency log and Fulcio's
  roots: "not checked offline", naming the identity it claims. Without model-signing installed,
  or without a signer in the policy, the signer is claimed, not verified.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import io
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from byog.schemas.policy import ModelSigner

PREDICATE = "https://model_signing/signature/v1.0"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
RESOURCES_MAX = 1_000_000
SHOWN = 3

Status = Literal["valid", "invalid", "not_checked"]


@dataclass(frozen=True)
class SignatureCheck:
    status: Status
    claimed: str  # who the signature says signed
    detail: str  # the sentence's tail
    signer: str | None = None  # the policy signer that verified it

    @property
    def line(self) -> str:
        by = f" by {self.signer}" if self.signer else ""
        return f"model.sig {self.status.replace('_', ' ')}{by} ({self.claimed}): {self.detail}"


class _Unreadable(ValueError):
    pass


def _doc(text: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except ValueError:
        raise _Unreadable("model.sig is not JSON") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("dsseEnvelope"), dict):
        raise _Unreadable("model.sig has no DSSE envelope (not an OMS signature)")
    return doc


def _statement(doc: dict[str, Any]) -> dict[str, Any]:
    envelope = doc["dsseEnvelope"]
    if envelope.get("payloadType") != PAYLOAD_TYPE:
        raise _Unreadable(f"model.sig's payload is not {PAYLOAD_TYPE}")
    try:
        statement = json.loads(base64.b64decode(str(envelope.get("payload", "")), validate=True))
    except (ValueError, binascii.Error):
        raise _Unreadable("model.sig's payload is not base64 JSON") from None
    if not isinstance(statement, dict) or statement.get("predicateType") != PREDICATE:
        raise _Unreadable(f"model.sig's statement is not an OMS signature ({PREDICATE})")
    return statement


def _resources(statement: dict[str, Any]) -> dict[str, str]:
    predicate = statement.get("predicate")
    resources = predicate.get("resources") if isinstance(predicate, dict) else None
    if not isinstance(resources, list) or len(resources) > RESOURCES_MAX:
        raise _Unreadable("model.sig's statement lists no resources")
    found: dict[str, str] = {}
    for item in resources:
        if not isinstance(item, dict) or item.get("algorithm") != "sha256":
            raise _Unreadable("model.sig lists a resource that is not a sha256 file digest")
        found[str(item.get("name"))] = str(item.get("digest"))
    return found


def claimed_signer(doc: dict[str, Any]) -> tuple[str, str]:
    """(method, who): key (its sha256 hint), certificate (its subject and SANs) or sigstore (identity claimed)."""
    material = doc.get("verificationMaterial")
    material = material if isinstance(material, dict) else {}
    keyless = bool(material.get("tlogEntries"))
    if isinstance(material.get("publicKey"), dict):
        hint = str(material["publicKey"].get("hint") or "no hint")
        return "key", f"key sha256 {hint[:16]}"
    chain = material.get("x509CertificateChain")
    certs = chain.get("certificates") if isinstance(chain, dict) else None
    leaf = certs[0] if isinstance(certs, list) and certs else material.get("certificate")
    if isinstance(leaf, dict):
        who = _certificate_identity(str(leaf.get("rawBytes", "")))
        return ("sigstore" if keyless else "certificate"), who
    return "unknown", "no verification material"


def _certificate_identity(raw: str) -> str:
    from cryptography import x509

    try:
        cert = x509.load_der_x509_certificate(base64.b64decode(raw))
    except (ValueError, binascii.Error):
        return "an unreadable certificate"
    try:
        names = [str(n.value) for n in cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value]
    except x509.ExtensionNotFound:
        names = []
    return f"certificate {cert.subject.rfc4514_string() or '(no subject)'}" + (f", {', '.join(names)}" if names else "")


def _covers(listed: dict[str, str], recorded: dict[str, str]) -> str | None:
    """Why the signed digests are not the recorded files, or None when they are the same set."""
    differ = [n for n in sorted(listed) if n in recorded and recorded[n] != listed[n]]
    unknown = [n for n in sorted(listed) if n not in recorded]
    unsigned = [n for n in sorted(recorded) if n not in listed]
    for names, what in ((differ, "differs from what was signed"), (unknown, "signed, not in the folder")):
        if names:
            return f"{', '.join(names[:SHOWN])}{' …' if len(names) > SHOWN else ''}: {what}"
    if unsigned:
        return f"{', '.join(unsigned[:SHOWN])}{' …' if len(unsigned) > SHOWN else ''}: in the folder, not signed"
    return None


def _verified_by(text: str, signers: list[ModelSigner], method: str) -> str | None:
    """The name of the first policy signer whose key or certificate model-signing verifies the bundle with."""
    from model_signing._signing import sign_certificate, sign_ec_key, sign_sigstore_pb

    with tempfile.TemporaryDirectory() as folder:
        sig = Path(folder) / "model.sig"
        sig.write_text(text, encoding="utf-8")
        signature = sign_sigstore_pb.Signature.read(sig)
        for signer in signers:
            material = Path(folder) / "signer.pem"
            material.write_text(signer.public_key or signer.certificate or "", encoding="utf-8")
            if (method == "key") != (signer.public_key is not None):
                continue
            try:
                with contextlib.redirect_stdout(io.StringIO()):  # it prints a warning for old bundles
                    verifier = (
                        sign_ec_key.Verifier(material)
                        if signer.public_key is not None
                        else sign_certificate.Verifier([material])
                    )
                    verifier.verify(signature)
            except Exception:  # model-signing raises ValueError, InvalidSignature, x509 errors...
                continue
            return signer.name
    return None


def check_signature(text: str, recorded: dict[str, str], signers: list[ModelSigner]) -> SignatureCheck:
    """A recorded model.sig held to the recorded per-file digests and, offline, to the policy's signers."""
    try:
        doc = _doc(text)
        statement = _statement(doc)
        listed = _resources(statement)
    except _Unreadable as err:
        return SignatureCheck("invalid", "no signer readable", str(err))
    method, who = claimed_signer(doc)
    mismatch = _covers(listed, recorded)
    if mismatch is not None:
        return SignatureCheck("invalid", who, f"it covers other files: {mismatch}")
    covered = f"its {len(listed)} file digests are the recorded ones"
    if method == "sigstore":
        return SignatureCheck("not_checked", who, f"{covered}; a Sigstore signature is not checked offline")
    if method == "unknown":
        return SignatureCheck("invalid", who, f"{covered}; no key or certificate to verify it with")
    if not any((s.public_key is not None) == (method == "key") for s in signers):
        return SignatureCheck("not_checked", who, f"{covered}; the policy names no {method} to verify it with")
    try:
        signer = _verified_by(text, signers, method)
    except ImportError:
        return SignatureCheck(
            "not_checked", who, f"{covered}; verifying needs model-signing (pip install model-signing)"
        )
    except Exception:  # a bundle model-signing cannot parse
        return SignatureCheck("invalid", who, f"{covered}; model-signing cannot read it as a Sigstore bundle")
    if signer is None:
        return SignatureCheck("invalid", who, f"{covered}; no {method} the policy names verifies its signature")
    return SignatureCheck("valid", who, covered, signer)
