"""Bundles: pack a run directory into a signed archive and check one: the manifest, the
deterministic archive, SSH signatures, safe extraction, ``byog verify`` and its checks (run in a
limited child), the PR comment and ``byog report``/``byog attach``. The run directory's layout is
``byog.core.paths``, canonical JSON ``byog.core.canonical``, the report's rendering ``byog.report``."""
