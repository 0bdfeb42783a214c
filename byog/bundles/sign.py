"""SSH signatures over manifest.intoto.json: OpenSSH's ssh-keygen when installed, else byog's own
SSHSIG implementation (``byog.bundles.sshsig``, the same format, checked against ssh-keygen by tests).

Backend (``BYOG_SSH_BACKEND``, or ``backend =`` under ``[signing]`` in the config file):
``auto`` (default) uses ssh-keygen when it is on PATH, else Python; when
``BYOG_SIGNING_KEY_PASSPHRASE`` is set, ``auto`` signs in Python (ssh-keygen would prompt for
the passphrase). ``ssh-keygen`` or ``python`` forces one.

Signing: ``ssh-keygen -Y sign -f KEY -n byog-bundle@v1`` with the message on stdin, or
``sshsig.sign``. KEY is a private key file (OpenSSH or PEM; an encrypted one needs
``BYOG_SIGNING_KEY_PASSPHRASE`` in Python), or, with ssh-keygen only, a public key whose private
half is in ssh-agent (SSH_AUTH_SOCK).

Which key (first found wins):
  1. ``BYOG_SIGNING_KEY``: a key file path;
  2. ``~/.config/byog/config`` (or ``$XDG_CONFIG_HOME/byog/config``), INI: ``[signing]`` ``key = PATH``;
  3. git's ``user.signingkey`` when ``gpg.format = ssh`` (a path, or ``key::ssh-ed25519 AAAA...``
     for an agent key), so a developer who signs commits with SSH signs bundles with no setup.
No key: the bundle is packed unsigned and byog says so.

Verifying: the signature file must be at most 8 KiB and exactly ssh-keygen's armor. With
ssh-keygen, ``-Y find-principals`` names who (in an allowed_signers file) holds the signing key,
then ``-Y verify -I <principal>`` checks the signature for that principal and namespace (both
exit 0 on success and 255 otherwise: OpenSSH ssh-keygen.c ``sig_verify``/``sig_find_principals``).
In Python, ``sshsig.verify`` then ``sshsig.find_principals``. A verify step that does not finish
within its timeout is a failed check (exit 1), never exit 3: the input came from the bundle.
allowed_signers lines are ``principals [options] keytype base64``; OpenSSH before 9.7 reports
blank lines as "missing key", so byog never writes blank lines.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from byog.bundles import sshsig
from byog.core.errors import CheckFailed, EnvironmentProblem, UsageError
from byog.core.settings import (
    SIGNING_KEY_ENV,
    SIGNING_KEY_PASSPHRASE_ENV,
    SSH_BACKEND_ENV,
    config_dir,
    config_file,
    config_setting,
)

NAMESPACE = "byog-bundle@v1"
BACKENDS = ("auto", "ssh-keygen", "python")
MAX_SIGNATURE_BYTES = 8 * 1024  # an RSA-4096 signature is ~1.1 kB armored
MAX_ALLOWED_SIGNERS_BYTES = 4 * 1024 * 1024
_TIMEOUT_S = 60  # signing: a passphrase prompt or a slow agent
_VERIFY_TIMEOUT_S = 20  # verifying: input is capped, so only a hostile signature could take longer
_FINGERPRINT = re.compile(r"(SHA256:[A-Za-z0-9+/=]+)")
# Key types ssh-keygen -Y accepts; a key line from anywhere else must be exactly "type base64".
KEY_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)
_PUBLIC_KEY = re.compile(r"^(?P<type>[a-z0-9@.-]+) (?P<blob>[A-Za-z0-9+/]+={0,2})(?: [^\r\n]*)?$")


def default_allowed_signers() -> Path:
    return config_dir() / "allowed_signers"


def _signing_setting(name: str) -> tuple[str, Path]:
    """``name`` under [signing] in byog's config file ('' when the file or the setting is absent), and the file."""
    return config_setting("signing", name), config_file()


def _configured_backend() -> str:
    value = os.environ.get(SSH_BACKEND_ENV, "").strip() or _signing_setting("backend")[0] or "auto"
    if value not in BACKENDS:
        raise UsageError(
            f"{SSH_BACKEND_ENV} (or backend in [signing]) must be one of {', '.join(BACKENDS)}, not '{value}'"
        )
    return value


def backend(*, signing: bool = False) -> str:
    """'ssh-keygen' or 'python': the configured backend, with 'auto' resolved (see the module doc)."""
    choice = _configured_backend()
    if choice != "auto":
        return choice
    if signing and os.environ.get(SIGNING_KEY_PASSPHRASE_ENV):
        return "python"
    return "ssh-keygen" if shutil.which("ssh-keygen") else "python"


def ssh_keygen() -> str:
    found = shutil.which("ssh-keygen")
    if found is None:
        raise EnvironmentProblem(
            "ssh-keygen (OpenSSH) is not installed; it signs and verifies bundles (apt install openssh-client)"
        )
    return found


def _run(args: list[str], *, stdin: bytes = b"", verifying: bool = False) -> subprocess.CompletedProcess[bytes]:
    timeout = _VERIFY_TIMEOUT_S if verifying else _TIMEOUT_S
    try:
        return subprocess.run([ssh_keygen(), *args], input=stdin, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        if verifying:  # the signature came from the bundle: its slowness is the bundle's failure
            raise CheckFailed(
                f"ssh-keygen {args[0]} {args[1]} did not finish in {timeout} s on this bundle's signature"
            ) from None
        raise EnvironmentProblem(
            f"ssh-keygen {args[0]} {args[1]} did not finish in {timeout} s (a passphrase prompt?)"
        ) from None


def normalize_public_key(line: str) -> str:
    """'type base64' of a public key line, or UsageError: nothing else may reach allowed_signers."""
    match = _PUBLIC_KEY.match(line.strip())
    if not match or match.group("type") not in KEY_TYPES:
        raise UsageError(f"not an SSH public key usable for signatures: {line.strip()[:60]!r}")
    return f"{match.group('type')} {match.group('blob')}"


@dataclass(frozen=True)
class SigningKey:
    path: Path  # private key, or public key when the private half is in the agent
    source: str  # where the choice came from, for messages

    def public_key(self) -> str:
        """'type base64' of this key (from KEY.pub, the key itself if public, or the private key)."""
        for candidate in (Path(f"{self.path}.pub"), self.path):
            try:
                return normalize_public_key(candidate.read_text(encoding="utf-8").splitlines()[0])
            except (OSError, UsageError, IndexError, UnicodeDecodeError):
                continue
        try:
            return sshsig.public_key_of(self._private()).openssh
        except UsageError:
            if backend(signing=True) != "ssh-keygen":
                raise
        result = _run(["-y", "-f", str(self.path)])
        if result.returncode != 0:
            raise UsageError(
                f"cannot read the public half of {self.path} ({self.source}): "
                f"{result.stderr.decode(errors='replace').strip()}"
            )
        return normalize_public_key(result.stdout.decode())

    def fingerprint(self) -> str:
        """SHA256:... of the public key (the same string ``ssh-keygen -l -E sha256`` prints)."""
        return sshsig.fingerprint_of_blob(base64.b64decode(self.public_key().split(" ")[1]))

    def _private(self) -> sshsig.PrivateKeyObject:
        try:
            data = self.path.read_bytes()
        except OSError as err:
            raise UsageError(f"cannot read signing key {self.path} (from {self.source}): {err.strerror}") from None
        try:
            return sshsig.load_private_key(data)
        except sshsig.SshsigError as err:
            raise UsageError(f"signing key {self.path} (from {self.source}): {err}") from None


def _git_signing_key() -> SigningKey | None:
    git = shutil.which("git")
    if git is None:
        return None

    def get(key: str) -> str:
        result = subprocess.run([git, "config", "--get", key], capture_output=True, text=True, check=False)
        return result.stdout.strip() if result.returncode == 0 else ""

    if get("gpg.format") != "ssh" or not (value := get("user.signingkey")):
        return None
    if value.startswith("key::") or value.startswith("ssh-"):
        # A literal public key: the private half must be in the agent; ssh-keygen wants a file.
        literal = normalize_public_key(value.removeprefix("key::"))
        cached = config_dir() / "git-signingkey.pub"
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(literal + "\n", encoding="utf-8")
        return SigningKey(cached, "git config user.signingkey (agent key)")
    return SigningKey(Path(value).expanduser(), "git config user.signingkey")


def configured_key() -> SigningKey | None:
    """The signing key the user configured (see the module doc for the order), or None."""
    if value := os.environ.get(SIGNING_KEY_ENV, "").strip():
        return SigningKey(Path(value).expanduser(), f"${SIGNING_KEY_ENV}")
    value, config_file = _signing_setting("key")
    if value:
        return SigningKey(Path(value).expanduser(), str(config_file))
    return _git_signing_key()


def sign_bytes(message: bytes, key: SigningKey) -> bytes:
    """The armored SSH signature of ``message`` (namespace byog-bundle@v1)."""
    if not key.path.is_file():
        raise UsageError(f"signing key {key.path} (from {key.source}) does not exist")
    if backend(signing=True) == "python":
        if _is_public_key_file(key.path):
            raise UsageError(
                f"{key.path} (from {key.source}) is a public key whose private half is in ssh-agent; "
                "signing through the agent needs ssh-keygen (OpenSSH), or point the key setting at the private key file"
            )
        try:
            return sshsig.sign(message, key._private(), NAMESPACE)
        except sshsig.SshsigError as err:
            raise UsageError(f"could not sign with {key.path} (from {key.source}): {err}") from None
    result = _run(["-Y", "sign", "-q", "-f", str(key.path), "-n", NAMESPACE], stdin=message)
    if result.returncode != 0 or not result.stdout.startswith(b"-----BEGIN SSH SIGNATURE-----"):
        detail = result.stderr.decode(errors="replace").strip().splitlines()
        raise UsageError(
            f"ssh-keygen could not sign with {key.path} (from {key.source}): {detail[-1] if detail else 'no output'}"
        )
    return result.stdout


def _is_public_key_file(path: Path) -> bool:
    try:
        head = path.read_bytes()[:64].decode("ascii", errors="replace").strip()
    except OSError:
        return False
    return head.split(" ")[0] in KEY_TYPES


ARMOR_BEGIN = sshsig.ARMOR_BEGIN
ARMOR_END = sshsig.ARMOR_END
ARMOR_LINE = sshsig.ARMOR_LINE  # ssh-keygen wraps the base64 body at 70 columns (sshbuf_dtob64 in sshsig_armor)


def is_canonical_armor(signature: bytes) -> bool:
    """True when ``signature`` is byte for byte what ssh-keygen -Y sign writes for its own blob.

    ssh-keygen reads past some variations (a trailing byte after the END line, base64 padding
    bits); the signature file is the one file the manifest cannot hash, so its form is pinned here.
    """
    lines = signature.split(b"\n")
    if len(lines) < 4 or lines[0] != ARMOR_BEGIN or lines[-2] != ARMOR_END or lines[-1] != b"":
        return False
    try:
        blob = base64.b64decode(b"".join(lines[1:-2]), validate=True)
    except ValueError:
        return False
    body = base64.b64encode(blob)
    wrapped = [body[i : i + ARMOR_LINE] for i in range(0, len(body), ARMOR_LINE)]
    return signature == b"\n".join([ARMOR_BEGIN, *wrapped, ARMOR_END, b""])


@dataclass(frozen=True)
class SignatureCheck:
    principal: str  # who, per the allowed_signers file
    fingerprint: str  # SHA256:... of the signing key


def signature_fingerprint(message: bytes, signature: bytes) -> str | None:
    """The signing key's fingerprint when the signature is valid for ``message`` (signer not checked)."""
    with tempfile.TemporaryDirectory(prefix="byog-sig-") as tmp:
        sig = Path(tmp) / "manifest.sig"
        sig.write_bytes(signature)
        result = _run(["-Y", "check-novalidate", "-n", NAMESPACE, "-s", str(sig)], stdin=message, verifying=True)
    found = _FINGERPRINT.search(result.stdout.decode(errors="replace"))
    return found.group(1) if result.returncode == 0 and found else None


def _read_allowed_signers(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_ALLOWED_SIGNERS_BYTES:
            raise UsageError(f"allowed signers file {path} is over {MAX_ALLOWED_SIGNERS_BYTES // 2**20} MiB")
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"cannot read allowed signers file {path}: {err}") from None


def _verify_python(message: bytes, signature: bytes, allowed_signers: Path) -> SignatureCheck:
    try:
        signers = sshsig.parse_allowed_signers(_read_allowed_signers(allowed_signers))
    except sshsig.SshsigError as err:
        raise UsageError(f"{allowed_signers}: {err}") from None
    try:
        parsed = sshsig.parse_signature(signature)
    except sshsig.SshsigError as err:
        raise CheckFailed(f"the signature is not a valid byog-bundle@v1 SSH signature of the manifest: {err}") from None
    fingerprint = parsed.fingerprint
    principals = sshsig.find_principals(signers, parsed.public_blob)
    try:
        sshsig.verify(message, signature, NAMESPACE)
    except sshsig.UnsupportedKey as err:
        if principals:  # a trusted signer's security key: only ssh-keygen can check it
            raise EnvironmentProblem(
                f"the bundle is signed by {fingerprint}, listed in {allowed_signers}: {err}"
            ) from None
        raise CheckFailed(f"signed by key {fingerprint}, which is not in {allowed_signers}: the wrong signer") from None
    except sshsig.SshsigError as err:
        raise CheckFailed(f"the signature is not a valid byog-bundle@v1 SSH signature of the manifest: {err}") from None
    # The same two steps as with ssh-keygen: find-principals, then verify -I <principal> -n <namespace>.
    if not principals:
        raise CheckFailed(f"signed by key {fingerprint}, which is not in {allowed_signers}: the wrong signer")
    for principal in principals:
        if sshsig.authorizes(signers, principal, parsed.public_blob, NAMESPACE):
            return SignatureCheck(principal=principal, fingerprint=fingerprint)
    raise CheckFailed(
        f"key {fingerprint} is listed for {', '.join(principals)} in {allowed_signers} but not for namespace "
        f"{NAMESPACE} at this time"
    )


def verify_signature(message: bytes, signature: bytes, allowed_signers: Path) -> SignatureCheck:
    """Check that ``signature`` is a byog-bundle@v1 signature of ``message`` by an allowed signer."""
    if not allowed_signers.is_file():
        raise CheckFailed(
            f"allowed signers file {allowed_signers} does not exist (byog keys add GITHUB_USER makes one)"
        )
    if len(signature) > MAX_SIGNATURE_BYTES:
        raise CheckFailed(
            f"the signature file is {len(signature):,} bytes; an SSH signature is under {MAX_SIGNATURE_BYTES // 1024} "
            "KiB"
        )
    if not is_canonical_armor(signature):
        raise CheckFailed("the signature file is not in the exact form ssh-keygen writes (altered after signing)")
    if backend() == "python":
        return _verify_python(message, signature, allowed_signers)
    # find-principals, then verify -I <principal>: the accepting path costs two ssh-keygen runs (the
    # fingerprint is in verify's "Good ..." line); check-novalidate runs only to word a refusal.
    with tempfile.TemporaryDirectory(prefix="byog-sig-") as tmp:
        sig = Path(tmp) / "manifest.sig"
        sig.write_bytes(signature)
        found = _run(["-Y", "find-principals", "-s", str(sig), "-f", str(allowed_signers)], verifying=True)
        principals = [line.strip() for line in found.stdout.decode(errors="replace").splitlines() if line.strip()]
        if found.returncode == 0:
            for principal in principals:
                checked = _run(
                    ["-Y", "verify", "-f", str(allowed_signers), "-I", principal, "-n", NAMESPACE, "-s", str(sig)],
                    stdin=message,
                    verifying=True,
                )
                # 'Good "<namespace>" signature for <principal> with <type> key SHA256:...': the key is last
                good = checked.stdout.decode(errors="replace").split()[-1:]
                if checked.returncode == 0 and good and _FINGERPRINT.fullmatch(good[0]):
                    return SignatureCheck(principal=principal, fingerprint=good[0])
    fingerprint = signature_fingerprint(message, signature)
    if fingerprint is None:
        raise CheckFailed("the signature is not a valid byog-bundle@v1 SSH signature of the manifest")
    if found.returncode != 0 or not principals:
        raise CheckFailed(f"signed by key {fingerprint}, which is not in {allowed_signers}: the wrong signer")
    raise CheckFailed(
        f"key {fingerprint} is listed for {', '.join(principals)} in {allowed_signers} but not for namespace "
        f"{NAMESPACE} at this time"
    )
