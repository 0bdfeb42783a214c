"""SSH signatures (OpenSSH's PROTOCOL.sshsig) made and checked with the ``cryptography`` package.

Why: a GPU host without an OpenSSH client cannot run ``ssh-keygen -Y sign``, and a bundle must
still be signed there, in the very format ssh-keygen writes and checks. ``byog.bundles.sign``
uses ssh-keygen when it is installed and this module otherwise (``BYOG_SSH_BACKEND`` forces one).

The format (PROTOCOL.sshsig; SSH wire types of RFC 4251: ``string`` = uint32 length + bytes,
``mpint`` = two's-complement big-endian, minimal, as a string):

    blob        = "SSHSIG" uint32(1) string(public key) string(namespace) string(reserved="")
                  string(hash algorithm) string(signature)
    signed data = "SSHSIG" string(namespace) string(reserved="") string(hash algorithm)
                  string(H(message))                    H = sha512 (ssh-keygen's default) or sha256
    armor       = "-----BEGIN SSH SIGNATURE-----\\n", base64(blob) wrapped at 70 columns (what
                  ssh-keygen writes), "\\n-----END SSH SIGNATURE-----\\n"

Signature encodings by key type (the SSH ones: RFC 8709 Ed25519, RFC 5656 ECDSA, RFC 8332 RSA):
  ssh-ed25519          string("ssh-ed25519") string(64-byte signature of the signed data)
  ecdsa-sha2-nistpN    string(key type) string(mpint r, mpint s); the signed data hashed with
                       SHA-256 (P-256), SHA-384 (P-384) or SHA-512 (P-521)
  ssh-rsa              string("rsa-sha2-512" or "rsa-sha2-256") string(PKCS#1 v1.5 signature);
                       the legacy SHA-1 "ssh-rsa" signature is refused, as the protocol says
Ed25519 signatures are deterministic, so this module and ssh-keygen write identical bytes for
the same key and message (the cross-check tests rely on it).

Allowed signers (ssh-keygen(1), ALLOWED SIGNERS): one ``principals [options] keytype base64
[comment]`` per line, ``#`` comments and blank lines ignored; options ``namespaces="p1,p2"``
(pattern-list), ``valid-after=`` / ``valid-before=`` (YYYYMMDD[Z] or YYYYMMDDHHMM[SS][Z],
local time unless Z), ``cert-authority`` (certificates are not supported here: such a line
never matches a plain key). Pattern-lists follow ssh_config(5) PATTERNS: ``*``, ``?``, and a
leading ``!`` that negates.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import fnmatch
import hashlib
import os
import re
import struct
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

from byog.core.settings import SIGNING_KEY_PASSPHRASE_ENV

MAGIC = b"SSHSIG"
VERSION = 1
DEFAULT_HASH = "sha512"  # what ssh-keygen -Y sign uses
ARMOR_BEGIN = b"-----BEGIN SSH SIGNATURE-----"
ARMOR_END = b"-----END SSH SIGNATURE-----"
ARMOR_LINE = 70  # ssh-keygen wraps the base64 body at 70 columns
MIN_RSA_BITS = 1024  # OpenSSH's SSH_RSA_MINIMUM_MODULUS_SIZE

_MESSAGE_HASHES: dict[str, type[hashes.HashAlgorithm]] = {"sha256": hashes.SHA256, "sha512": hashes.SHA512}
_CURVES: dict[str, tuple[str, type[ec.EllipticCurve], type[hashes.HashAlgorithm]]] = {
    # key type -> (curve name in the key blob, curve, the hash ECDSA signs with)
    "ecdsa-sha2-nistp256": ("nistp256", ec.SECP256R1, hashes.SHA256),
    "ecdsa-sha2-nistp384": ("nistp384", ec.SECP384R1, hashes.SHA384),
    "ecdsa-sha2-nistp521": ("nistp521", ec.SECP521R1, hashes.SHA512),
}
_RSA_SIGNATURES: dict[str, type[hashes.HashAlgorithm]] = {"rsa-sha2-512": hashes.SHA512, "rsa-sha2-256": hashes.SHA256}

PublicKeyObject = ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey | rsa.RSAPublicKey
PrivateKeyObject = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


class SshsigError(ValueError):
    """A signature, key or allowed_signers line that is malformed or does not verify; str() is one sentence."""


class PassphraseNeeded(SshsigError):
    """The private key is encrypted and no passphrase was given (``BYOG_SIGNING_KEY_PASSPHRASE``)."""


class UnsupportedKey(SshsigError):
    """A real OpenSSH key type this module cannot check (security keys, sk-*): ssh-keygen can."""


OPENSSH_ONLY_TYPES = ("sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com")


def fingerprint_of_blob(blob: bytes) -> str:
    """``SHA256:`` + unpadded base64 of sha256(blob): what ``ssh-keygen -l -E sha256`` prints."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


# --- SSH wire encoding ------------------------------------------------------------------------


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _mpint(value: int) -> bytes:
    if value < 0:
        raise SshsigError("negative integers have no place in a signature")
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big") if value else b""
    return _string(b"\0" + raw if raw and raw[0] & 0x80 else raw)


class _Reader:
    """Reads SSH wire types from a byte string; every read is bounds-checked."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise SshsigError(f"{self.what} is truncated")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def u32(self) -> int:
        return int(struct.unpack(">I", self.take(4))[0])

    def string(self) -> bytes:
        return self.take(self.u32())

    def text(self) -> str:
        try:
            return self.string().decode("ascii")
        except UnicodeDecodeError:
            raise SshsigError(f"{self.what} holds a name that is not ASCII") from None

    def mpint(self) -> int:
        raw = self.string()
        if raw and raw[0] & 0x80:
            raise SshsigError(f"{self.what} holds a negative integer")
        return int.from_bytes(raw, "big")

    def done(self) -> None:
        if self.pos != len(self.data):
            raise SshsigError(f"{self.what} has {len(self.data) - self.pos} trailing bytes")


# --- public keys ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PublicKey:
    key_type: str  # e.g. "ssh-ed25519"
    blob: bytes  # the SSH wire encoding (what a fingerprint hashes)
    key: Any  # the cryptography public key object

    @property
    def fingerprint(self) -> str:
        return fingerprint_of_blob(self.blob)

    @property
    def openssh(self) -> str:
        """'type base64', the form of an authorized_keys / allowed_signers key."""
        return f"{self.key_type} {base64.b64encode(self.blob).decode()}"


def _public_from_object(key: Any) -> PublicKey:
    line = key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    key_type, b64 = line.split(" ")[:2]
    if key_type not in ("ssh-ed25519", "ssh-rsa", *_CURVES):
        raise SshsigError(f"{key_type} keys are not supported without ssh-keygen (Ed25519, ECDSA and RSA are)")
    return PublicKey(key_type=key_type, blob=base64.b64decode(b64), key=key)


def parse_public_blob(blob: bytes) -> PublicKey:
    """The key of an SSH public key blob; refused unless the blob is exactly its canonical encoding."""
    key_type = _Reader(blob, "the public key").text()
    if key_type in OPENSSH_ONLY_TYPES:
        raise UnsupportedKey(f"{key_type} keys (security keys) are checked by ssh-keygen only; install OpenSSH")
    if key_type not in ("ssh-ed25519", "ssh-rsa", *_CURVES):
        raise SshsigError(f"{key_type[:40]!r} keys are not supported without ssh-keygen (Ed25519, ECDSA and RSA are)")
    try:
        key = serialization.load_ssh_public_key(f"{key_type} {base64.b64encode(blob).decode()}".encode())
    except (ValueError, UnsupportedAlgorithm) as err:
        raise SshsigError(f"the {key_type} public key does not parse: {err}") from None
    parsed = _public_from_object(key)
    if parsed.blob != blob:
        raise SshsigError(f"the {key_type} public key is not in its canonical encoding")
    if isinstance(key, rsa.RSAPublicKey) and key.key_size < MIN_RSA_BITS:
        raise SshsigError(f"the RSA key has {key.key_size} bits, fewer than {MIN_RSA_BITS}")
    return parsed


# --- private keys -----------------------------------------------------------------------------


def _load(data: bytes, passphrase: bytes | None) -> Any:
    if b"-----BEGIN OPENSSH PRIVATE KEY-----" in data:
        return serialization.load_ssh_private_key(data, passphrase)
    return serialization.load_pem_private_key(data, passphrase)


def load_private_key(data: bytes, passphrase: bytes | None = None) -> PrivateKeyObject:
    """An OpenSSH (``-----BEGIN OPENSSH PRIVATE KEY-----``) or PEM private key, encrypted or not.

    ``passphrase`` None reads ``BYOG_SIGNING_KEY_PASSPHRASE``; an encrypted key without one is
    refused with ``PassphraseNeeded`` (never a prompt: byog runs unattended). A passphrase set
    for a key that has none is ignored.
    """
    if passphrase is None and os.environ.get(SIGNING_KEY_PASSPHRASE_ENV):
        passphrase = os.environ[SIGNING_KEY_PASSPHRASE_ENV].encode()
    try:
        try:
            key = _load(data, passphrase)
        except TypeError:  # encrypted without a passphrase, or a passphrase for a plain key
            if passphrase is None:
                raise PassphraseNeeded(
                    f"the private key is encrypted: set {SIGNING_KEY_PASSPHRASE_ENV} to its passphrase"
                ) from None
            key = _load(data, None)
    except TypeError as err:
        raise SshsigError(f"the private key could not be read: {err}") from None
    except ValueError as err:
        if passphrase is not None:
            raise SshsigError(
                f"the passphrase in {SIGNING_KEY_PASSPHRASE_ENV} does not decrypt the private key"
                " (or the key is corrupt)"
            ) from None
        first = str(err).splitlines()[0] if str(err) else "unknown format"
        raise SshsigError(f"the private key could not be read: {first}") from None
    except UnsupportedAlgorithm as err:
        raise SshsigError(f"the private key's algorithm is not supported: {err}") from None
    if not isinstance(key, (ed25519.Ed25519PrivateKey, ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey)):
        raise SshsigError(f"{type(key).__name__} keys cannot sign byog bundles (Ed25519, ECDSA and RSA can)")
    return key


def public_key_of(private_key: PrivateKeyObject) -> PublicKey:
    return _public_from_object(private_key.public_key())


# --- signing ----------------------------------------------------------------------------------


def signed_data(namespace: str, hash_alg: str, message: bytes) -> bytes:
    """What the key actually signs: the preamble, namespace, reserved, hash name and H(message)."""
    digest = hashes.Hash(_MESSAGE_HASHES[hash_alg]())
    digest.update(message)
    return MAGIC + _string(namespace.encode()) + _string(b"") + _string(hash_alg.encode()) + _string(digest.finalize())


def armor(blob: bytes) -> bytes:
    body = base64.b64encode(blob)
    lines = [body[i : i + ARMOR_LINE] for i in range(0, len(body), ARMOR_LINE)]
    return b"\n".join([ARMOR_BEGIN, *lines, ARMOR_END, b""])


def dearmor(signature: bytes) -> bytes:
    """The blob of an armored signature (lenient about line breaks; byog.bundles.sign pins the exact form)."""
    text = signature.strip()
    if not text.startswith(ARMOR_BEGIN) or not text.endswith(ARMOR_END):
        raise SshsigError("not an armored SSH signature (no BEGIN/END SSH SIGNATURE lines)")
    body = b"".join(text[len(ARMOR_BEGIN) : -len(ARMOR_END)].split())
    try:
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise SshsigError("the SSH signature's base64 body is malformed") from None


def sign(message: bytes, private_key: PrivateKeyObject, namespace: str, hash_alg: str = DEFAULT_HASH) -> bytes:
    """The armored SSHSIG signature of ``message`` in ``namespace``, as ``ssh-keygen -Y sign`` writes it."""
    if not namespace:
        raise SshsigError("the namespace must not be empty")
    if hash_alg not in _MESSAGE_HASHES:
        raise SshsigError(f"hash algorithm {hash_alg!r} is not sha256 or sha512")
    public = public_key_of(private_key)
    data = signed_data(namespace, hash_alg, message)
    if isinstance(private_key, ed25519.Ed25519PrivateKey):
        signature = _string(b"ssh-ed25519") + _string(private_key.sign(data))
    elif isinstance(private_key, ec.EllipticCurvePrivateKey):
        _, _, digest = _CURVES[public.key_type]
        r, s = decode_dss_signature(private_key.sign(data, ec.ECDSA(digest())))
        signature = _string(public.key_type.encode()) + _string(_mpint(r) + _mpint(s))
    else:
        signature = _string(b"rsa-sha2-512") + _string(private_key.sign(data, padding.PKCS1v15(), hashes.SHA512()))
    blob = (
        MAGIC
        + struct.pack(">I", VERSION)
        + _string(public.blob)
        + _string(namespace.encode())
        + _string(b"")
        + _string(hash_alg.encode())
        + _string(signature)
    )
    return armor(blob)


# --- verifying --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParsedSignature:
    public_blob: bytes  # the signing key's SSH encoding, not yet parsed (see public_key())
    namespace: str
    hash_alg: str
    signature: bytes  # the inner SSH signature encoding

    @property
    def fingerprint(self) -> str:
        return fingerprint_of_blob(self.public_blob)

    def public_key(self) -> PublicKey:
        return parse_public_blob(self.public_blob)


def parse_signature(armored: bytes) -> ParsedSignature:
    reader = _Reader(dearmor(armored), "the SSH signature")
    if reader.take(len(MAGIC)) != MAGIC:
        raise SshsigError("the SSH signature does not start with SSHSIG")
    version = reader.u32()
    if version != VERSION:
        raise SshsigError(f"SSH signature version {version} is not supported (only {VERSION})")
    public_blob = reader.string()
    namespace = reader.string()
    reader.string()  # reserved: ignored, as the protocol says
    hash_alg = reader.text()
    signature = reader.string()
    reader.done()
    try:
        namespace_text = namespace.decode("utf-8")
    except UnicodeDecodeError:
        raise SshsigError("the SSH signature's namespace is not UTF-8") from None
    if hash_alg not in _MESSAGE_HASHES:
        raise SshsigError(f"the SSH signature uses hash {hash_alg[:20]!r}, not sha256 or sha512")
    return ParsedSignature(public_blob, namespace_text, hash_alg, signature)


def _check_raw_signature(public: PublicKey, signature: bytes, data: bytes) -> None:
    reader = _Reader(signature, "the signature")
    sig_type = reader.text()
    raw = reader.string()
    reader.done()
    key = public.key
    try:
        if public.key_type == "ssh-ed25519":
            if sig_type != "ssh-ed25519" or len(raw) != 64:
                raise SshsigError(f"an Ed25519 key with a {sig_type[:40]!r} signature")
            key.verify(raw, data)
        elif public.key_type in _CURVES:
            if sig_type != public.key_type:
                raise SshsigError(f"an {public.key_type} key with a {sig_type[:40]!r} signature")
            inner = _Reader(raw, "the ECDSA signature")
            r, s = inner.mpint(), inner.mpint()
            inner.done()
            key.verify(encode_dss_signature(r, s), data, ec.ECDSA(_CURVES[public.key_type][2]()))
        else:
            if sig_type not in _RSA_SIGNATURES:
                raise SshsigError(f"an RSA key with a {sig_type[:40]!r} signature (only rsa-sha2-256/512 are allowed)")
            key.verify(raw, data, padding.PKCS1v15(), _RSA_SIGNATURES[sig_type]())
    except InvalidSignature:
        raise SshsigError("the signature does not match the message") from None


def verify(message: bytes, armored: bytes, namespace: str) -> PublicKey:
    """The key that made ``armored`` over ``message`` in ``namespace``; SshsigError otherwise.

    Like ``ssh-keygen -Y check-novalidate``: it proves the holder of that key signed; who that
    is comes from an allowed_signers file (``find_principals``).
    """
    parsed = parse_signature(armored)
    if parsed.namespace != namespace:
        raise SshsigError(f"the signature is for namespace {parsed.namespace[:60]!r}, not {namespace!r}")
    public = parsed.public_key()
    _check_raw_signature(public, parsed.signature, signed_data(namespace, parsed.hash_alg, message))
    return public


# --- allowed signers --------------------------------------------------------------------------


def match_pattern_list(name: str, pattern_list: str) -> bool:
    """ssh_config(5) PATTERNS: comma-separated ``*``/``?`` globs; a match of a ``!pattern`` is a veto."""
    matched = False
    for pattern in pattern_list.split(","):
        negated = pattern.startswith("!")
        glob = pattern[1:] if negated else pattern
        if fnmatch.fnmatchcase(name, glob):
            if negated:
                return False
            matched = True
    return matched


_TIME = re.compile(r"^(\d{4})(\d{2})(\d{2})(?:(\d{2})(\d{2})(\d{2})?)?(Z?)$")


def _timestamp(value: str) -> datetime.datetime:
    found = _TIME.match(value)
    if not found:
        raise SshsigError(f"timestamp {value[:30]!r} is not YYYYMMDD[Z] or YYYYMMDDHHMM[SS][Z]")
    year, month, day, hour, minute, second, zulu = found.groups()
    try:
        moment = datetime.datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0))
    except ValueError:
        raise SshsigError(f"timestamp {value[:30]!r} is not a valid date") from None
    return moment.replace(tzinfo=datetime.timezone.utc) if zulu else moment.astimezone()


@dataclass(frozen=True)
class AllowedSigner:
    principals: str  # a pattern-list, as written
    key_type: str
    key_blob: bytes  # compared byte for byte with the signing key's blob; parsed only to check a signature
    namespaces: str | None = None  # a pattern-list; None: any namespace
    cert_authority: bool = False
    valid_after: datetime.datetime | None = None
    valid_before: datetime.datetime | None = None
    line: int = 0

    def valid_at(self, when: datetime.datetime) -> bool:
        if self.valid_after is not None and when < self.valid_after:
            return False
        return self.valid_before is None or when <= self.valid_before


def _split_field(text: str, where: str) -> tuple[str, str]:
    """The first space-separated field (double quotes protect spaces) and the rest of the line."""
    text = text.lstrip(" \t")
    out, quoted, i = [], False, 0
    while i < len(text):
        char = text[i]
        if char == '"':
            quoted = not quoted
        elif char in " \t" and not quoted:
            break
        out.append(char)
        i += 1
    if quoted:
        raise SshsigError(f"{where}: unterminated quotes")
    return "".join(out), text[i:].lstrip(" \t")


def _options(text: str, where: str) -> dict[str, str | None]:
    options: dict[str, str | None] = {}
    for item in re.findall(r'(?:[^,"]|"[^"]*")+', text):
        name, _, value = item.partition("=")
        key = name.strip().lower()
        if key not in ("cert-authority", "namespaces", "valid-after", "valid-before"):
            raise SshsigError(f"{where}: unknown option {name[:30]!r}")
        options[key] = value.strip('"') if value else None
    return options


def parse_allowed_signers(text: str) -> list[AllowedSigner]:
    """Every entry of an allowed_signers file; a malformed line is refused with its number."""
    signers = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"allowed_signers line {number}"
        principals, rest = _split_field(line, where)
        principals = principals.strip('"')
        first, after = _split_field(rest, where)
        options: dict[str, str | None] = {}
        if first and not re.fullmatch(r"(ssh|ecdsa|sk)-[a-z0-9@.-]+", first):
            options = _options(first, where)
            first, after = _split_field(after, where)
        if not principals or not first:
            raise SshsigError(f"{where}: expected 'principals [options] keytype base64'")
        fields = after.split()
        if not fields:
            raise SshsigError(f"{where}: expected 'principals [options] keytype base64'")
        try:
            blob = base64.b64decode(fields[0], validate=True)
        except (binascii.Error, ValueError):
            raise SshsigError(f"{where}: the key's base64 is malformed") from None
        if _Reader(blob, f"{where}'s key").text() != first:
            raise SshsigError(f"{where}: the key says it is {first[:40]!r} but its blob is not")
        signers.append(
            AllowedSigner(
                principals=principals,
                key_type=first,
                key_blob=blob,
                namespaces=options.get("namespaces"),
                cert_authority="cert-authority" in options,
                valid_after=_timestamp(options["valid-after"] or "") if "valid-after" in options else None,
                valid_before=_timestamp(options["valid-before"] or "") if "valid-before" in options else None,
                line=number,
            )
        )
    return signers


def _usable(signer: AllowedSigner, key_blob: bytes, when: datetime.datetime) -> bool:
    return not signer.cert_authority and signer.key_blob == key_blob and signer.valid_at(when)


def find_principals(signers: list[AllowedSigner], key_blob: bytes, when: datetime.datetime | None = None) -> list[str]:
    """The principals of the first line that lists the key and is valid at ``when``, split at commas:
    what ``ssh-keygen -Y find-principals`` prints (it does not look at namespaces)."""
    when = when or datetime.datetime.now(datetime.timezone.utc)
    first = next((s for s in signers if _usable(s, key_blob, when)), None)
    return first.principals.split(",") if first else []


def authorizes(
    signers: list[AllowedSigner], principal: str, key_blob: bytes, namespace: str, when: datetime.datetime | None = None
) -> bool:
    """Whether some line lets ``principal`` sign with the key in ``namespace`` at ``when``: what
    ``ssh-keygen -Y verify -I principal -n namespace`` decides once the signature itself holds."""
    when = when or datetime.datetime.now(datetime.timezone.utc)
    return any(
        _usable(s, key_blob, when)
        and match_pattern_list(principal, s.principals)
        and (s.namespaces is None or match_pattern_list(namespace, s.namespaces))
        for s in signers
    )
