"""Real OpenSSH keys for the tests, made by the real ssh-keygen: the one place a test makes a key.

A signing key (a contributor's, for a bundle), a host or user key (the loopback sshd) and the odd
kinds the SSHSIG cross-check needs are all ``ssh_keygen`` with other arguments; the format is the
one a user's ~/.ssh holds, so byog reads exactly what it reads in the field.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from byog.bundles.sign import NAMESPACE, SigningKey


def ssh_keygen(path: Path, *kind: str, comment: str | None = None, passphrase: str = "") -> Path:
    """A new key at ``path`` (``path``.pub beside it): ``kind`` is ssh-keygen's type arguments
    (default ``-t ed25519``); ``comment`` None keeps ssh-keygen's own (user@host)."""
    named = ["-C", comment] if comment is not None else []
    subprocess.run(
        ["ssh-keygen", "-q", *(kind or ("-t", "ed25519")), "-N", passphrase, *named, "-f", str(path)], check=True
    )
    return path


def public_key(path: Path) -> str:
    """The key's public half as allowed_signers and authorized_keys name it: 'type base64'."""
    return " ".join(Path(f"{path}.pub").read_text().split()[:2])


def make_key(folder: Path, name: str) -> tuple[SigningKey, str]:
    """A fresh ed25519 key (no passphrase) named ``name``, as byog signs with it, and its public key."""
    path = ssh_keygen(folder / name, comment=name)
    return SigningKey(path, "test"), public_key(path)


def allowed_signers(path: Path, entries: list[tuple[str, str]]) -> Path:
    """An allowed_signers file trusting each (principal, public key) for byog's bundle namespace."""
    path.write_text("".join(f'{who} namespaces="{NAMESPACE}" {key}\n' for who, key in entries))
    return path


@dataclass(frozen=True)
class ContributorKey:
    """A contributor's key on disk (what BYOG_SIGNING_KEY names) and an allowed_signers file trusting it."""

    key: Path
    allowed_signers: Path


def make_contributor_key(folder: Path) -> ContributorKey:
    """contributor@example.com's key in ``folder``: the integration session's signing key."""
    key = ssh_keygen(folder / "id_ed25519", comment="contributor")
    allowed = folder / "allowed_signers"
    allowed.write_text(f'contributor@example.com namespaces="{NAMESPACE}" {(folder / "id_ed25519.pub").read_text()}')
    return ContributorKey(key, allowed)
