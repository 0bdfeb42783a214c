"""Token-level correctness: the numerics differential and the conformance suite."""
