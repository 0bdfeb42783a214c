"""byog's image names: one tag scheme (``byog-eval:<byog version>-<flavour>``) and how to build a missing one."""

from __future__ import annotations

from byog import __version__

IMAGE_REPO = "byog-eval"


FLAVOURS = ("gpu", "cpu", "cpu-host")


def default_tag(flavour: str) -> str:
    return f"{IMAGE_REPO}:{__version__}-{flavour}"


def wheel_tag(flavour: str, key: str) -> str:
    """The tag of a contributor's wheel installed over ``flavour``; ``key`` is its commit or sha256."""
    return f"{default_tag(flavour)}-vllm-{key[:12]}"


def build_hint(ref: str) -> str:
    """How to make a missing byog image, guessed from its tag."""
    if "@sha256:" in ref:
        return (
            "a digest names one exact build: pull it from where it was pushed, or build a new one with "
            "`byog image build --flavour gpu` and pin the digest `byog image inspect` prints"
        )
    if "-vllm-" in ref:
        flavour = next((f for f in sorted(FLAVOURS, key=len, reverse=True) if f"-{f}-vllm-" in ref), "cpu-host")
        return f"build it with `byog image build --flavour {flavour} --vllm-wheel WHEEL --tag {ref}`"
    flavour = next((f for f in sorted(FLAVOURS, key=len, reverse=True) if ref.endswith(f"-{f}")), "cpu-host")
    extra = "" if ref == default_tag(flavour) else f" --tag {ref}"
    return f"build it with `byog image build --flavour {flavour}{extra}`"
