"""byog's SSHSIG (byog.bundles.sshsig) cross-checked both ways against the real ssh-keygen.

For each key kind (Ed25519; ECDSA P-256 and P-384; RSA; an encrypted Ed25519 key; a PEM ECDSA
key): signed in Python -> ``ssh-keygen -Y verify`` accepts; signed by ssh-keygen -> Python
verifies and names the same key; a changed message, another namespace and another signer are
refused by both. Ed25519 and RSA (PKCS#1 v1.5) signatures are deterministic, so those two must be
byte for byte what ssh-keygen writes.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from byog.bundles import sshsig
from byog.bundles.sign import NAMESPACE, SigningKey, sign_bytes, verify_signature
from byog.core.errors import CheckFailed, UsageError
from byog.core.settings import SIGNING_KEY_PASSPHRASE_ENV
from tests.support.keys import public_key, ssh_keygen

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs OpenSSH's ssh-keygen to cross-check")

PASSPHRASE = "correct horse battery staple"
KINDS = {
    # name -> ssh-keygen arguments, passphrase
    "ed25519": (["-t", "ed25519"], ""),
    "ecdsa-p256": (["-t", "ecdsa", "-b", "256"], ""),
    "ecdsa-p384": (["-t", "ecdsa", "-b", "384"], ""),
    "rsa-3072": (["-t", "rsa", "-b", "3072"], ""),
    "ed25519-encrypted": (["-t", "ed25519"], PASSPHRASE),
    "ecdsa-p256-pem": (["-t", "ecdsa", "-b", "256", "-m", "PEM"], ""),
}
DETERMINISTIC = {"ed25519", "rsa-3072", "ed25519-encrypted"}


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("sshsig-keys")
    made = {}
    for name, (args, passphrase) in KINDS.items():
        made[name] = ssh_keygen(folder / name, *args, comment=name, passphrase=passphrase)
    return made


def _allowed(path: Path, entries: list[tuple[str, str]], options: str = f'namespaces="{NAMESPACE}" ') -> Path:
    path.write_text("".join(f"{who} {options}{key}\n" for who, key in entries))
    return path


def _keygen_verify(
    tmp: Path, allowed: Path, principal: str, namespace: str, message: bytes, signature: bytes
) -> subprocess.CompletedProcess[bytes]:
    sig = tmp / "sig"
    sig.write_bytes(signature)
    return subprocess.run(
        ["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", principal, "-n", namespace, "-s", str(sig)],
        input=message,
        capture_output=True,
    )


def _keygen_sign(tmp: Path, key: Path, namespace: str, message: bytes, passphrase: str) -> bytes:
    """ssh-keygen -Y sign, with an encrypted key's passphrase given through SSH_ASKPASS (no terminal)."""
    env = dict(os.environ)
    if passphrase:
        askpass = tmp / "askpass.sh"
        askpass.write_text(f"#!/bin/sh\necho '{passphrase}'\n")
        askpass.chmod(askpass.stat().st_mode | stat.S_IEXEC)
        env.update(SSH_ASKPASS=str(askpass), SSH_ASKPASS_REQUIRE="force", DISPLAY=env.get("DISPLAY", ":0"))
    done = subprocess.run(
        ["ssh-keygen", "-Y", "sign", "-q", "-f", str(key), "-n", namespace],
        input=message,
        capture_output=True,
        env=env,
        stdin=None,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def _private(name: str, path: Path) -> sshsig.PrivateKeyObject:
    return sshsig.load_private_key(path.read_bytes(), KINDS[name][1].encode() or None)


@pytest.mark.parametrize("name", sorted(KINDS))
def test_signed_in_python_verifies_with_ssh_keygen(name: str, keys: dict[str, Path], tmp_path: Path) -> None:
    message = b'{"_type":"https://in-toto.io/Statement/v1"}'
    signature = sshsig.sign(message, _private(name, keys[name]), NAMESPACE)
    allowed = _allowed(tmp_path / "allowed", [("alice@example.com", public_key(keys[name]))])
    good = _keygen_verify(tmp_path, allowed, "alice@example.com", NAMESPACE, message, signature)
    print(f"{name}: signed in Python, ssh-keygen -Y verify exit {good.returncode}: {good.stdout.decode().strip()}")
    assert good.returncode == 0 and b"Good" in good.stdout
    assert _keygen_verify(tmp_path, allowed, "alice@example.com", NAMESPACE, message + b" ", signature).returncode != 0
    assert _keygen_verify(tmp_path, allowed, "alice@example.com", "git", message, signature).returncode != 0
    other = _allowed(
        tmp_path / "other", [("alice@example.com", public_key(keys["ed25519" if name != "ed25519" else "ecdsa-p256"]))]
    )
    assert _keygen_verify(tmp_path, other, "alice@example.com", NAMESPACE, message, signature).returncode != 0


@pytest.mark.parametrize("name", sorted(KINDS))
def test_signed_by_ssh_keygen_verifies_in_python(name: str, keys: dict[str, Path], tmp_path: Path) -> None:
    message = b"the manifest bytes"
    signature = _keygen_sign(tmp_path, keys[name], NAMESPACE, message, KINDS[name][1])
    key = sshsig.verify(message, signature, NAMESPACE)
    fingerprint = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", f"{keys[name]}.pub"], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    print(f"{name}: signed by ssh-keygen, Python verifies key {key.fingerprint} (ssh-keygen -l: {fingerprint})")
    assert key.fingerprint == fingerprint and key.openssh == public_key(keys[name])
    with pytest.raises(sshsig.SshsigError, match="does not match"):
        sshsig.verify(message + b" ", signature, NAMESPACE)
    with pytest.raises(sshsig.SshsigError, match="namespace"):
        sshsig.verify(message, signature, "git")
    if name in DETERMINISTIC:
        assert sshsig.sign(message, _private(name, keys[name]), NAMESPACE) == signature  # byte for byte


def test_byog_verify_signature_gives_the_same_answers_with_either_backend(
    keys: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    message = b"manifest"
    allowed = _allowed(
        tmp_path / "allowed",
        [("alice@example.com", public_key(keys["ecdsa-p256"])), ("bob@example.com", public_key(keys["rsa-3072"]))],
    )
    signatures = {
        name: _keygen_sign(tmp_path, keys[name], NAMESPACE, message, KINDS[name][1])
        for name in ("ecdsa-p256", "rsa-3072", "ed25519")
    }
    outcomes = {}
    for backend in ("ssh-keygen", "python"):
        monkeypatch.setenv("BYOG_SSH_BACKEND", backend)
        found = []
        for name, signature in signatures.items():
            try:
                result = verify_signature(message, signature, allowed)
                found.append(f"{name}: {result.principal} {result.fingerprint}")
            except CheckFailed as err:
                found.append(f"{name}: refused ({'wrong signer' if 'wrong signer' in str(err) else err})")
        try:
            verify_signature(b"changed", signatures["ecdsa-p256"], allowed)
            found.append("tampered: accepted")
        except CheckFailed:
            found.append("tampered: refused")
        outcomes[backend] = found
        print(backend, found)
    assert outcomes["ssh-keygen"] == outcomes["python"]
    assert outcomes["python"][2] == "ed25519: refused (wrong signer)" and outcomes["python"][3] == "tampered: refused"


def test_sign_bytes_in_python_with_an_encrypted_key_needs_the_passphrase(
    keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    key = SigningKey(keys["ed25519-encrypted"], "test")
    monkeypatch.setenv("BYOG_SSH_BACKEND", "python")
    monkeypatch.delenv(SIGNING_KEY_PASSPHRASE_ENV, raising=False)
    with pytest.raises(UsageError, match=SIGNING_KEY_PASSPHRASE_ENV):
        sign_bytes(b"m", key)
    monkeypatch.setenv(SIGNING_KEY_PASSPHRASE_ENV, "wrong")
    with pytest.raises(UsageError, match="does not decrypt"):
        sign_bytes(b"m", key)
    monkeypatch.setenv(SIGNING_KEY_PASSPHRASE_ENV, PASSPHRASE)
    monkeypatch.setenv("BYOG_SSH_BACKEND", "auto")  # a passphrase in the environment: auto signs in Python
    assert sshsig.verify(b"m", sign_bytes(b"m", key), NAMESPACE).openssh == public_key(keys["ed25519-encrypted"])


def test_allowed_signers_rules_match_ssh_keygen(keys: dict[str, Path], tmp_path: Path) -> None:
    """Patterns, namespace lists, validity windows, cert-authority, quotes and comments: for each
    ordering of the lines, Python finds the same principals as ``ssh-keygen -Y find-principals`` and
    accepts exactly when ``ssh-keygen -Y verify -I <principal>`` does."""
    key = public_key(keys["ed25519"])
    past = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=2)).strftime("%Y%m%d")
    future = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=2)).strftime("%Y%m%d")
    lines = [
        f'"alice@example.com,al@example.com" namespaces="file,byog-*" {key} alice laptop',
        f'old@example.com valid-before="{past}Z" {key}',
        f'later@example.com valid-after="{future}Z" {key}',
        f'gitonly@example.com namespaces="git" {key}',
        f"*@example.com cert-authority {key}",
        f"any@example.com {key}",
        f'notbyog@example.com namespaces="*,!byog-bundle@v1" {key}',
    ]
    signature = sshsig.sign(b"m", _private("ed25519", keys["ed25519"]), NAMESPACE)
    sig = tmp_path / "sig"
    sig.write_bytes(signature)
    blob = sshsig.parse_signature(signature).public_blob
    compared = 0
    for first in range(len(lines)):
        text = "# team keys\n\n" + "\n".join(lines[first:] + lines[:first]) + "\n"
        allowed = tmp_path / "allowed"
        allowed.write_text(text)
        found = subprocess.run(
            ["ssh-keygen", "-Y", "find-principals", "-s", str(sig), "-f", str(allowed)], capture_output=True, text=True
        )
        theirs = [line.strip() for line in found.stdout.splitlines() if line.strip()]
        parsed = sshsig.parse_allowed_signers(text)
        ours = sshsig.find_principals(parsed, blob)
        assert ours == theirs, (lines[first], ours, theirs)
        for principal in ours:
            keygen = _keygen_verify(tmp_path, allowed, principal, NAMESPACE, b"m", signature).returncode == 0
            assert sshsig.authorizes(parsed, principal, blob, NAMESPACE) == keygen, (lines[first], principal)
            compared += 1
        print(f"first line {lines[first][:40]!r}: principals {ours}")
    assert compared >= 5
    assert sshsig.match_pattern_list("byog-bundle@v1", "file,byog-*") and not sshsig.match_pattern_list("git", "*,!git")


def test_malformed_signatures_and_keys_are_refused_in_one_sentence(keys: dict[str, Path]) -> None:
    signature = sshsig.sign(b"m", _private("ed25519", keys["ed25519"]), NAMESPACE)
    blob = sshsig.dearmor(signature)
    for bad, expected in [
        (b"not a signature", "not an armored"),
        (sshsig.armor(blob[:-3]), "truncated"),
        (sshsig.armor(blob + b"\0"), "trailing"),
        (sshsig.armor(b"SSHSIX" + blob[6:]), "SSHSIG"),
        (sshsig.armor(blob[:6] + b"\0\0\0\2" + blob[10:]), "version 2"),
    ]:
        with pytest.raises(sshsig.SshsigError, match=expected):
            sshsig.verify(b"m", bad, NAMESPACE)
    with pytest.raises(sshsig.SshsigError):
        sshsig.parse_allowed_signers('alice@example.com namespaces="x ssh-ed25519 AAAA\n')
