"""byog: bring your own GPU. Turns a vLLM speed-up claim into a signed, recomputable bundle.

Python API (docs/analysis.md): ``byog.open(path)`` opens a run directory or a bundle (verified first)
and returns its records as pandas DataFrames. It is loaded on first use, so ``import byog`` stays
light (no pandas, no pyarrow).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["__version__", "open"]


def __getattr__(name: str) -> Any:
    """``byog.open``: ``byog.bundles.results.open_results``, imported when first asked for."""
    if name == "open":
        from byog.bundles.results import open_results

        globals()["open"] = open_results
        return open_results
    raise AttributeError(f"module 'byog' has no attribute {name!r}")
