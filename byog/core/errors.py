"""The one error type a user ever sees, and its exit codes.

Anything raised as a ``ByogError`` is rendered by ``byog.cli`` as a single sentence with its
exit code; every other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_ENVIRONMENT = 3


class ByogError(Exception):
    """A known failure a person can act on. ``str(err)`` is the sentence shown to them."""

    exit_code: int = EXIT_CHECK_FAILED

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(ByogError):
    """Bad input: a plan, a flag, a path. Exit 2."""

    exit_code = EXIT_USAGE


class CheckFailed(ByogError):
    """A check ran and said no (verify, a verdict gate). Exit 1."""

    exit_code = EXIT_CHECK_FAILED


class EnvironmentProblem(ByogError):
    """Something this machine lacks: a Docker engine, a GPU, a key, a package. Exit 3."""

    exit_code = EXIT_ENVIRONMENT
