"""`python -m byog ...` as a terminal starts it, for the tests that interrupt a real run."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.support.cli import BYOG


def _sigint_as_a_terminal_gives_it() -> None:
    # A job a shell starts in the background inherits SIGINT *ignored*, and Python then never installs
    # its KeyboardInterrupt handler: the test would measure its own launcher, not byog.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextlib.contextmanager
def byog_process(*args: str, cwd: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A running byog (stdout and stderr in one pipe); if the test fails while it runs, it is stopped.

    The stop is SIGTERM first, so byog takes its servers down as a user's Ctrl-C would: a run left
    behind would load the box for every test after this one.
    """
    proc = subprocess.Popen(
        [*BYOG, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        preexec_fn=_sigint_as_a_terminal_gives_it,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()


def wait_while_running(proc: subprocess.Popen[bytes], ready: Callable[[], bool], what: str) -> None:
    """Poll ``ready()`` (<= 10 min) while byog runs; fail with byog's output, ``what`` naming the moment,
    if byog exits or time runs out first."""
    deadline = time.monotonic() + 600
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"never {what}: " + proc.communicate(timeout=30)[0].decode()[-3000:])
        time.sleep(0.5)


def interrupt(proc: subprocess.Popen[bytes], sig: signal.Signals) -> str:
    """Send SIG to byog and wait for it to exit; its output."""
    proc.send_signal(sig)
    return proc.communicate(timeout=120)[0].decode()


def interrupt_once_started(
    proc: subprocess.Popen[bytes], record: Path, sig: signal.Signals, while_running: Callable[[], None] = lambda: None
) -> str:
    """Wait for the server record a launch writes, let requests go out, send SIG; byog's output.

    `while_running` asserts what must hold mid-run, before the signal.
    """
    wait_while_running(proc, record.is_file, f"started ({record} written)")
    while_running()
    time.sleep(3)  # the first requests are in flight: the interrupt lands mid-point
    return interrupt(proc, sig)
