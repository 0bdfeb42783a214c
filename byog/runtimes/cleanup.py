"""Containers byog started and no live byog owns any more: found by label and removed.

Every container byog starts carries its owner's pid and host (``byog.images.engine`` labels); a
runtime sweeps the orphans of dead owners before it starts."""

from __future__ import annotations

import contextlib
import socket
from typing import Any

from byog.core.processes import process_alive
from byog.images.engine import LABEL_MANAGED, LABEL_OWNER_HOST, LABEL_OWNER_PID

STOP_GRACE_S = 20


def sweep_orphans(client: Any) -> list[str]:
    """Remove byog containers on this host whose owning byog process is gone; returns their names."""
    removed = []
    me = socket.gethostname()
    for container in client.containers.list(all=True, filters={"label": f"{LABEL_MANAGED}=1"}):
        labels = container.labels or {}
        if labels.get(LABEL_OWNER_HOST) != me:
            continue
        try:
            owner = int(labels.get(LABEL_OWNER_PID, "0"))
        except ValueError:
            owner = 0
        if owner and process_alive(owner):
            continue
        remove_container(container)
        removed.append(container.name)
    return removed


def remove_container(container: Any, grace_s: int = STOP_GRACE_S) -> None:
    from docker.errors import APIError, NotFound

    try:
        container.reload()
        if container.status == "running":
            container.stop(timeout=grace_s)
    except NotFound:
        return
    except APIError:
        pass
    with contextlib.suppress(NotFound):
        container.remove(force=True)
