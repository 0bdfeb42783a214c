"""verify's checks: small named units, run in order, reported together.

Importing this package registers every check (``base.CHECKS`` keeps the order below).
"""

from byog.bundles.checks import integrity, signature, schemas, recompute, policy, claims  # noqa: F401  (registration)
from byog.bundles.checks.base import CHECKS, CheckResult, VerifyContext, run_checks

__all__ = ["CHECKS", "CheckResult", "VerifyContext", "run_checks"]
