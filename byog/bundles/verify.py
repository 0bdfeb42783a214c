"""``byog verify BUNDLE``: trust nothing in the bundle until each check says so.

Order: safe extraction into a private temp dir (nothing is read before every member is vetted),
then the checks of ``byog.bundles.checks`` in order: manifest, hashes, predicate, signature,
schemas, summary, report, policy, claims. Exit 0 when none failed, 1 otherwise (an unsafe
archive fails as one line), 2 for usage errors, 3 when ssh-keygen is missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml
from pydantic import BaseModel, ValidationError

from byog.bundles.rundir import RunDir
from byog.bundles.unpack import Extracted, Limits, UnsafeBundle
from byog.errors import UsageError
from byog.schemas.claims import ClaimsFile
from byog.schemas.policy import Policy


@dataclass
class VerifyReport:
    bundle: str
    results: list[Any] = field(default_factory=list)  # CheckResult
    signer: str | None = None
    details: dict[str, Any] = field(default_factory=dict)  # per-check extras, e.g. every claim's outcome

    @property
    def verified(self) -> bool:
        return bool(self.results) and all(result.ok for result in self.results)

    @property
    def failures(self) -> list[str]:
        return [f"{r.name}: {r.message}" for r in self.results if r.status == "fail"]

    def as_json(self) -> dict[str, Any]:
        return {
            "bundle": self.bundle,
            "verified": self.verified,
            "signer": self.signer,
            "checks": [{"name": r.name, "status": r.status, "message": r.message} for r in self.results],
            "details": self.details,
        }


def _load_yaml_model(path: Path | None, model: type[BaseModel], what: str) -> Any:
    if path is None:
        return None
    if not path.is_file():
        raise UsageError(f"{what} file {path} does not exist")
    try:
        return model.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except yaml.YAMLError as err:
        raise UsageError(f"{path} is not valid YAML: {err}") from None
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "(top level)"
        raise UsageError(f"{path}: '{where}': {first['msg']}") from None


def verify_bundle(
    bundle: Path,
    *,
    allowed_signers: Path | None = None,
    policy: Path | None = None,
    claims: Path | None = None,
    allow_unsigned: bool = False,
    derive_summary: Callable[[RunDir], dict[str, Any]] | None = None,
    limits: Limits = Limits(),
) -> VerifyReport:
    """Run every check; never raises for a bad bundle (the report says why), only for bad usage or environment."""
    from byog.bundles.checks import VerifyContext, run_checks
    from byog.bundles.checks.base import CheckResult

    if not bundle.is_file():
        raise UsageError(f"bundle {bundle} does not exist")
    if allowed_signers is not None and not allowed_signers.is_file():
        raise UsageError(f"allowed signers file {allowed_signers} does not exist")
    policy_model = _load_yaml_model(policy, Policy, "policy")
    claims_model = _load_yaml_model(claims, ClaimsFile, "claims")
    report = VerifyReport(bundle=str(bundle))
    try:
        with Extracted(bundle, limits) as extracted:
            assert extracted.root is not None
            ctx = VerifyContext(
                bundle=bundle,
                root=extracted.root,
                names=extracted.names,
                allowed_signers=allowed_signers,
                policy=policy_model,
                claims=claims_model,
                allow_unsigned=allow_unsigned,
                derive_summary=derive_summary,
            )
            safe = CheckResult("archive", "pass", f"{len(extracted.names)} members, all regular files with safe names")
            report.results = [safe, *run_checks(ctx)]
            report.signer = ctx.signer
            report.details = ctx.notes
    except UnsafeBundle as err:
        report.results = [CheckResult("archive", "fail", str(err))]
    return report
