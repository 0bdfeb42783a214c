"""Bundles: seal a run directory into a signed archive and check one. The manifest (``manifest``),
the deterministic archive (``archive``, ``pack``), the end of ``byog run`` (``finalize``), SSH
signatures and allowed signers (``sign``, ``sshsig``, ``keys``), safe extraction and the bounds on
every input (``unpack``, ``bounds``), ``byog verify`` and its checks (``verify``, ``checks``; the
content checks run in a limited child: ``isolate``, ``verify_events``), the PR workflow and its
comment (``pr``, ``comment``), ``byog report``/``byog attach`` (``publish``) and ``byog items``
(``items``). The run directory's layout is ``byog.core.paths``, canonical JSON
``byog.core.canonical``, the report's rendering ``byog.report``."""
