"""``byog keys add GITHUB_USER``: a GitHub user's SSH signing keys into an allowed_signers file.

Source: ``GET https://api.github.com/users/USER/ssh_signing_keys`` (public, no token), a JSON
list of ``{"id", "key", "title", "created_at"}``. ``BYOG_GITHUB_API`` overrides the base URL
(tests use a local HTTP server). Every key is re-parsed to exactly "type base64" before it is
written, so a hostile response cannot smuggle a second line or a wildcard principal into the
file; each line restricts the key to byog's namespace.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from byog.bundles.sign import NAMESPACE, normalize_public_key
from byog.core.errors import CheckFailed, EnvironmentProblem, UsageError
from byog.core.io import atomic_write_text
from byog.core.settings import GITHUB_API_ENV

GITHUB_API = "https://api.github.com"
_GITHUB_USER = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
_MAX_RESPONSE_BYTES = 1_000_000


def principal_for(user: str) -> str:
    return f"{user}@github.com"


def fetch_signing_keys(user: str, *, api: str | None = None) -> list[str]:
    import httpx  # heavy (~0.1 s to import): only `byog keys add` needs it, not every bundles command

    if not _GITHUB_USER.match(user):
        raise UsageError(f"'{user}' is not a GitHub user name (letters, digits and '-', at most 39)")
    base = (api or os.environ.get(GITHUB_API_ENV) or GITHUB_API).rstrip("/")
    url = f"{base}/users/{user}/ssh_signing_keys"
    try:
        response = httpx.get(
            url, headers={"Accept": "application/vnd.github+json"}, timeout=20.0, follow_redirects=False
        )
    except httpx.HTTPError as err:
        raise EnvironmentProblem(f"could not reach {url}: {err}") from None
    if response.status_code == 404:
        raise UsageError(f"GitHub has no user '{user}'")
    if response.status_code != 200:
        raise EnvironmentProblem(f"{url} answered HTTP {response.status_code}")
    if len(response.content) > _MAX_RESPONSE_BYTES:
        raise CheckFailed(f"{url} answered with {len(response.content)} bytes; refusing a response that large")
    try:
        entries = response.json()
    except ValueError:
        raise CheckFailed(f"{url} did not answer with JSON") from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("key"), str) for e in entries):
        raise CheckFailed(f"{url} did not answer with a list of keys")
    keys = [normalize_public_key(entry["key"]) for entry in entries]
    if not keys:
        raise UsageError(f"GitHub user '{user}' has no SSH signing keys (github.com/settings/keys, 'Signing Key')")
    return keys


def allowed_signers_line(principal: str, public_key: str) -> str:
    return f'{principal} namespaces="{NAMESPACE}" {normalize_public_key(public_key)}'


@dataclass(frozen=True)
class KeysAdded:
    path: Path
    principal: str
    added: int
    already_present: int


def add_keys(path: Path, principal: str, public_keys: list[str]) -> KeysAdded:
    """Append one line per key (skipping lines already there); never writes blank lines."""
    existing = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    kept = [line for line in existing if line.strip()]
    new_lines = [allowed_signers_line(principal, key) for key in public_keys]
    fresh = [line for line in dict.fromkeys(new_lines) if line not in kept]
    atomic_write_text(path, "\n".join(kept + fresh) + "\n")
    return KeysAdded(path=path, principal=principal, added=len(fresh), already_present=len(new_lines) - len(fresh))


def add_github_user(user: str, allowed_signers: Path, *, api: str | None = None) -> KeysAdded:
    return add_keys(allowed_signers, principal_for(user), fetch_signing_keys(user, api=api))
