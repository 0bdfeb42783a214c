"""Stopping a local server's process group (byog.runtimes.local.kill_process_group) on real processes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from byog.runtimes.local import group_alive, kill_process_group

# The leader starts a child that stays in its group, says it is up, and notes the SIGTERM it gets.
FAMILY = """
trap 'echo term > "$1"; exit 0' TERM
echo up > "$2"
while :; do sleep 0.1; done
"""


def _family(tmp_path: Path, leader_script: str) -> tuple[subprocess.Popen[bytes], Path]:
    (tmp_path / "child.sh").write_text(FAMILY)
    termed, up = tmp_path / "termed", tmp_path / "up"
    leader = subprocess.Popen(
        ["sh", "-c", leader_script, "leader", str(tmp_path / "child.sh"), str(termed), str(up)],
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not up.exists():
        assert leader.poll() is None and time.monotonic() < deadline, "the child never started"
        time.sleep(0.05)
    return leader, termed


def _stop_within(leader: subprocess.Popen[bytes], grace_s: float, join_s: float) -> bool:
    stopper = threading.Thread(target=kill_process_group, args=(leader,), kwargs={"grace_s": grace_s}, daemon=True)
    stopper.start()
    stopper.join(join_s)
    return not stopper.is_alive()


def test_a_dead_leaders_group_gets_sigterm_without_the_leaders_grace(tmp_path: Path) -> None:
    """The leader was killed (kill -9, a crash): nothing can use its grace, so the group is signalled
    at once. The grace is an hour; the stop must be over long before it."""
    leader, termed = _family(tmp_path, 'sh "$1" "$2" "$3" & wait')
    leader.send_signal(signal.SIGKILL)
    leader.wait()
    try:
        assert group_alive(leader.pid)  # the child lives on in the dead leader's group
        assert _stop_within(leader, grace_s=3600, join_s=60)
        assert termed.read_text().strip() == "term" and not group_alive(leader.pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(leader.pid, signal.SIGKILL)


def test_a_live_leader_gets_its_grace_before_the_group_is_signalled(tmp_path: Path) -> None:
    """A leader that ignores SIGTERM keeps its grace: for that long nothing else in the group is signalled."""
    leader, termed = _family(tmp_path, 'sh "$1" "$2" "$3" & trap "" TERM; wait')
    try:
        assert not _stop_within(leader, grace_s=3600, join_s=2)  # still inside the leader's grace
        assert not termed.exists()
    finally:
        leader.send_signal(signal.SIGKILL)
        kill_process_group(leader, grace_s=0)
    assert not group_alive(leader.pid)
