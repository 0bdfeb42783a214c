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
    resume: str | None = None  # the command that picks the stopped work up again, printed after the sentence

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


class PlanProblems(UsageError):
    """Every problem found in one input at once: ``byog.cli`` prints the sentence, then one line per problem."""

    def __init__(
        self, what: str, problems: list[str], *, notes: list[str] | None = None, outcome: str = "nothing started"
    ) -> None:
        self.what = what
        self.problems = list(problems)
        self.notes = list(notes or [])
        count = len(self.problems)
        if count == 1 and not self.notes:
            super().__init__(f"{what}: {self.problems[0]}")
            self.problems = []
        else:
            super().__init__(f"{what}: {count} problem{'s' if count != 1 else ''}, {outcome}")

    def lines(self) -> list[str]:
        """The sentence, each problem, then what could not be checked and why."""
        return [self.args[0], *(f"- {p}" for p in self.problems), *(f"not checked: {n}" for n in self.notes)]

    def __str__(self) -> str:
        return "\n  ".join(self.lines())
