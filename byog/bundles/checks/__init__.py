"""verify's checks: small named units, run in the order of ``ORDER``, reported together.

Importing this package registers every check; the order is declared here, not left to the order
of imports, because a check may require another to have passed first. First what needs no trust
(manifest, hashes, signature), then, for a trusted signer only, the subject and the content
checks (bounds, predicate, schemas, summary, report, policy, claims).
"""

from byog.bundles.checks import bounds, claims, integrity, policy, predicate, recompute, schemas, signature  # noqa: F401  (registration)
from byog.bundles.checks.base import CHECKS, Check, CheckResult, VerifyContext, run_checks, run_one

ORDER = (
    "manifest",
    "hashes",
    "signature",
    "subject",
    "bounds",
    "predicate",
    "schemas",
    "summary",
    "report",
    "policy",
    "claims",
)
CHECKS.sort(key=lambda item: ORDER.index(item.name))

__all__ = ["CHECKS", "ORDER", "Check", "CheckResult", "VerifyContext", "run_checks", "run_one"]
