"""The built-in claims files: the published figures of a built-in profile, ``claims/<profile>.claims.yaml``.

``byog verify BUNDLE --claims PATH`` takes any claims file; these are the ones byog ships, so a
maintainer holds a bundle against the published table without retyping it.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from byog.core.errors import UsageError

SUFFIX = ".claims.yaml"


def builtin_claims() -> list[str]:
    folder = resources.files("byog.plans") / "claims"
    return sorted(p.name[: -len(SUFFIX)] for p in folder.iterdir() if p.name.endswith(SUFFIX))


def builtin_claims_path(profile: str) -> Path:
    """The claims file of a built-in profile (e.g. 'kimi-k3-gb300')."""
    name = profile.removeprefix("profiles/").removesuffix(".yaml")
    if name not in builtin_claims():
        raise UsageError(f"no built-in claims file for '{profile}' (there are: {', '.join(builtin_claims())})")
    return Path(str(resources.files("byog.plans") / "claims" / f"{name}{SUFFIX}"))
