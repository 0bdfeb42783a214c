"""process_alive tells a live pid from a finished one, and counts another user's process as alive."""

from __future__ import annotations

import os
import subprocess
import sys

from byog.core.processes import process_alive


def test_this_process_is_alive() -> None:
    assert process_alive(os.getpid())


def test_a_reaped_process_is_not() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: its pid no longer exists
    assert not process_alive(child.pid)


def test_another_users_process_is_alive() -> None:
    # pid 1 always exists; where another user owns it, signal 0 is refused (PermissionError): still alive
    assert process_alive(1)
