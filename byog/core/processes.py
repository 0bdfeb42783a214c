"""Whether a process still exists (for owner checks of leftovers: containers, verify temp dirs)."""

from __future__ import annotations

import os


def process_alive(pid: int) -> bool:
    """True while ``pid`` exists, also when it belongs to another user (signal 0 is then refused)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
