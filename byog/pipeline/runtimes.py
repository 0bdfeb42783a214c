"""Which runtime starts a server config: the one ``byog.runtimes.registry`` holds under its ``runtime``
(local process, docker container, existing endpoint, or a multi-node cluster of local, docker, ssh or slurm nodes)."""

from __future__ import annotations

from byog.runtimes.registry import PlannedLaunch, Runtime, runtime_for

__all__ = ["PlannedLaunch", "Runtime", "runtime_for"]
