"""A git commit as byog records and compares it: 7 to 40 lowercase hex digits, or absent.

One home for the format (server.json's ``identity.vllm.commit``, a bundle's subject, a policy's
stock commits) and for the one comparison rule: two commits are the same when both are well formed
and the shorter is a prefix of the longer; two full (40-digit) commits are the same only when
equal. Anything else (``main``, ``HEAD; $(touch x)``, a head followed by free text) is not a commit.
"""

from __future__ import annotations

import re

COMMIT_PATTERN = r"^[0-9a-f]{7,40}$"
SHA256_PATTERN = r"^[0-9a-f]{64}$"  # a file's or a wheel's sha256 as hashlib writes it
FULL_LENGTH = 40
_COMMIT = re.compile(COMMIT_PATTERN)


def is_commit(value: object) -> bool:
    return isinstance(value, str) and _COMMIT.fullmatch(value) is not None


def same_commit(a: str | None, b: str | None) -> bool:
    """Both well formed and one abbreviates the other (equal when both are full)."""
    if a is None or b is None or not is_commit(a) or not is_commit(b):
        return False
    shorter, longer = sorted((a, b), key=len)
    return longer.startswith(shorter)
