"""byog: bring your own GPU. Turns a vLLM speed-up claim into a signed, recomputable bundle."""

__version__ = "0.1.0"
