"""A model folder's OMS signature, made by model-signing itself with a local EC key, checked offline:
valid with the publisher's key; a file changed after signing, another key, a rewritten payload and
hostile text each fail in one sentence; no key in the policy: the signer is claimed, not verified."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from byog.bundles.model_sig import check_signature
from byog.runtimes.identity_probe import model_identity
from byog.schemas.policy import ModelSigner


def _key(path: Path) -> str:
    """A fresh P-256 key written to ``path`` (PKCS8 PEM); its public key as PEM text."""
    private = ec.generate_private_key(ec.SECP256R1())
    path.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return (
        private.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def _signed_folder(tmp_path: Path) -> tuple[Path, str]:
    from model_signing import hashing, signing

    folder = tmp_path / "model"
    (folder / "sub").mkdir(parents=True)
    (folder / "config.json").write_text('{"hidden_size": 8}')
    (folder / "model.safetensors").write_bytes(bytes(range(256)) * 64)
    (folder / "sub" / "tokenizer.json").write_text("{}")
    (folder / "README.md").write_text("a model\n")
    public = _key(tmp_path / "publisher.pem")
    config = signing.Config().use_elliptic_key_signer(private_key=tmp_path / "publisher.pem")
    config.set_hashing_config(hashing.Config().set_ignored_paths(paths=[".byog-complete", "model.sig"]))
    config.sign(folder, folder / "model.sig")
    return folder, public


def _recorded(folder: Path) -> tuple[str, dict[str, str]]:
    """What the probe records of the folder: model.sig's text and the OMS-covered files' sha256."""
    found = model_identity(str(folder), None)
    oms = found["oms"]
    return oms["signature"]["text"], {**found["files"], **oms["other_files"]}


@pytest.fixture
def signed(tmp_path: Path) -> tuple[Path, str]:
    return _signed_folder(tmp_path)


def test_a_folder_signed_by_model_signing_verifies_with_the_publishers_key(signed: tuple[Path, str]) -> None:
    folder, public = signed
    text, recorded = _recorded(folder)
    found = check_signature(text, recorded, [ModelSigner(name="publisher", public_key=public)])
    assert (found.status, found.signer) == ("valid", "publisher")
    assert found.line.startswith("model.sig valid by publisher (key sha256 ")
    assert found.line.endswith("): its 4 file digests are the recorded ones")


def test_a_file_changed_after_signing_fails(signed: tuple[Path, str]) -> None:
    folder, public = signed
    (folder / "config.json").write_text('{"hidden_size": 9}')
    text, recorded = _recorded(folder)
    found = check_signature(text, recorded, [ModelSigner(name="publisher", public_key=public)])
    assert (
        found.status == "invalid" and found.detail == "it covers other files: config.json: differs from what was signed"
    )


def test_another_key_or_a_rewritten_payload_does_not_verify(tmp_path: Path, signed: tuple[Path, str]) -> None:
    folder, public = signed
    text, recorded = _recorded(folder)
    other = _key(tmp_path / "other.pem")
    found = check_signature(text, recorded, [ModelSigner(name="someone", public_key=other)])
    assert found.status == "invalid" and found.detail.endswith("no key the policy names verifies its signature")

    # the weights changed and the payload rewritten to list them: the publisher's signature no longer holds
    (folder / "config.json").write_text('{"hidden_size": 9}')
    _, changed = _recorded(folder)
    doc = json.loads(text)
    statement = json.loads(base64.b64decode(doc["dsseEnvelope"]["payload"]))
    for item in statement["predicate"]["resources"]:
        item["digest"] = changed[item["name"]]
    doc["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    forged = check_signature(json.dumps(doc), changed, [ModelSigner(name="publisher", public_key=public)])
    assert forged.status == "invalid" and forged.detail.endswith("no key the policy names verifies its signature")


def test_without_a_key_the_signer_is_claimed_not_verified(signed: tuple[Path, str]) -> None:
    text, recorded = _recorded(signed[0])
    found = check_signature(text, recorded, [])
    assert found.status == "not_checked" and found.signer is None
    assert found.detail.endswith("the policy names no key to verify it with")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("not json", "model.sig is not JSON"),
        ("[]", "model.sig has no DSSE envelope (not an OMS signature)"),
        ('{"dsseEnvelope": {"payloadType": "text/plain"}}', "model.sig's payload is not application/vnd.in-toto+json"),
        (
            '{"dsseEnvelope": {"payloadType": "application/vnd.in-toto+json", "payload": "!!"}}',
            "model.sig's payload is not base64 JSON",
        ),
    ],
)
def test_hostile_text_is_one_sentence(text: str, why: str) -> None:
    found = check_signature(text, {}, [])
    assert (found.status, found.detail) == ("invalid", why)


def _certificates(tmp_path: Path) -> tuple[str, str]:
    """A CA and a signing certificate it issued (key in tmp_path/leaf.pem): the CA's PEM, another CA's PEM."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)

    def cert(
        subject: str, key: ec.EllipticCurvePrivateKey, issuer: tuple[str, ec.EllipticCurvePrivateKey] | None, ca: bool
    ):
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
        builder = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer[0])]) if issuer else name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=not ca,
                    key_cert_sign=ca,
                    crl_sign=ca,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
        )
        if not ca:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.RFC822Name("publisher@example.com")]), critical=False
            )
        return builder.sign(issuer[1] if issuer else key, hashes.SHA256())

    pem = serialization.Encoding.PEM
    ca_key, other_key, leaf_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(3))
    ca, other = cert("Publisher CA", ca_key, None, True), cert("Other CA", other_key, None, True)
    leaf = cert("publisher signing", leaf_key, ("Publisher CA", ca_key), False)
    (tmp_path / "leaf.pem").write_bytes(
        leaf_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    (tmp_path / "leaf.crt").write_bytes(leaf.public_bytes(pem))
    (tmp_path / "ca.crt").write_bytes(ca.public_bytes(pem))
    return ca.public_bytes(pem).decode(), other.public_bytes(pem).decode()


def test_a_certificate_signature_verifies_with_the_ca_the_policy_names(tmp_path: Path) -> None:
    from model_signing import hashing, signing

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    ca, other = _certificates(tmp_path)
    config = signing.Config().use_certificate_signer(
        private_key=tmp_path / "leaf.pem",
        signing_certificate=tmp_path / "leaf.crt",
        certificate_chain=[tmp_path / "ca.crt"],
    )
    config.set_hashing_config(hashing.Config().set_ignored_paths(paths=[".byog-complete", "model.sig"]))
    config.sign(folder, folder / "model.sig")
    text, recorded = _recorded(folder)
    found = check_signature(text, recorded, [ModelSigner(name="publisher", certificate=ca)])
    assert (found.status, found.signer) == ("valid", "publisher")
    assert found.claimed == "certificate CN=publisher signing, publisher@example.com"
    refused = check_signature(text, recorded, [ModelSigner(name="other", certificate=other)])
    assert refused.status == "invalid" and refused.detail.endswith(
        "no certificate the policy names verifies its signature"
    )
