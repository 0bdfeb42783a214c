"""Printed by every node of a multi-node server: its fingerprint as one JSON line.

``python -m byog.runtimes.node_probe`` runs on the node itself (a process on this host, in the
node's container, or over SSH), so server.json records what each node really has: host name,
Python, package versions, GPUs as NVML sees them, and the CUDA_VISIBLE_DEVICES byog gave it.
"""

from __future__ import annotations

import json
import os
import socket

from byog.images.fingerprint import environment_fingerprint


def node_fingerprint() -> dict[str, object]:
    return {
        "hostname": socket.gethostname(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        **environment_fingerprint(),
    }


if __name__ == "__main__":
    print(json.dumps(node_fingerprint(), sort_keys=True))
