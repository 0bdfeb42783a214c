"""The labels a wheel layer (``byog image build --vllm-wheel``) writes on its image.

Written by ``byog.images.wheel_layer``, printed by ``byog image inspect``, and read back from a
server's recorded identity (``identity.image.labels``) where verify holds them against what the
server's own interpreter reported (``byog.analysis.identity_consistency``).
"""

from __future__ import annotations

IMAGE_LABEL_WHEEL_FILE = "byog.vllm-wheel.file"
IMAGE_LABEL_WHEEL_SHA256 = "byog.vllm-wheel.sha256"
IMAGE_LABEL_WHEEL_VERSION = "byog.vllm-wheel.version"
IMAGE_LABEL_WHEEL_COMMIT = "byog.vllm-wheel.commit"  # absent when the wheel names none
IMAGE_LABEL_WHEEL_COMMIT_SOURCE = "byog.vllm-wheel.commit-source"  # which part of the wheel named it
IMAGE_LABEL_WHEEL_BASE = "byog.vllm-wheel.base"  # the image it was installed over: ref@id
IMAGE_LABEL_WHEEL_BASE_ID = "byog.vllm-wheel.base-id"
IMAGE_LABEL_WHEEL_BASE_DIGESTS = (
    "byog.vllm-wheel.base-digests"  # its RepoDigests, space-separated; none if never pushed
)
WHEEL_LABELS = (
    IMAGE_LABEL_WHEEL_FILE,
    IMAGE_LABEL_WHEEL_SHA256,
    IMAGE_LABEL_WHEEL_VERSION,
    IMAGE_LABEL_WHEEL_COMMIT,
    IMAGE_LABEL_WHEEL_COMMIT_SOURCE,
    IMAGE_LABEL_WHEEL_BASE,
    IMAGE_LABEL_WHEEL_BASE_ID,
    IMAGE_LABEL_WHEEL_BASE_DIGESTS,
)
