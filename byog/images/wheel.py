"""What a contributor's vLLM wheel says it is: its sha256 and the commit it was built from.

The commit is read, in this order, from ``vllm/_version.py``'s ``__commit_id__`` inside the wheel
(what vLLM's build writes), else from a ``+g<sha>`` local version (setuptools-scm) in the wheel's
METADATA or file name. ``commit_source`` says which, so a label never passes a guess off as a fact.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from byog.core.errors import UsageError
from byog.core.io import sha256_file

COMMIT_ID = re.compile(r"""^__commit_id__\s*=\s*(?:commit_id\s*=\s*)?['"]([0-9a-fA-F]{7,40})['"]""", re.MULTILINE)
LOCAL_VERSION_SHA = re.compile(r"\+g([0-9a-fA-F]{7,40})(?:[.\-_]|$)")
METADATA_VERSION = re.compile(r"^Version:\s*(\S+)\s*$", re.MULTILINE)
NO_COMMIT = "no commit"


@dataclass(frozen=True)
class WheelIdentity:
    file_name: str
    sha256: str
    version: str | None
    commit: str | None  # None: the wheel names no commit
    commit_source: str  # "vllm/_version.py __commit_id__", "METADATA +g<sha>", "file name +g<sha>" or "no commit"


def read_wheel_identity(wheel: Path) -> WheelIdentity:
    """The identity of a wheel file; UsageError (one sentence) when it is not a wheel."""
    if not wheel.is_file():
        raise UsageError(f"--vllm-wheel {wheel}: no such file")
    try:
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
            version_py = _read(archive, names, "vllm/_version.py")
            metadata = next((n for n in names if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)), None)
            metadata_text = _read(archive, names, metadata) if metadata else None
    except zipfile.BadZipFile:
        raise UsageError(f"--vllm-wheel {wheel.name} is not a wheel (not a zip archive)") from None
    if metadata_text is None:
        raise UsageError(f"--vllm-wheel {wheel.name} is not a wheel (no .dist-info/METADATA inside)")
    version_match = METADATA_VERSION.search(metadata_text)
    version = version_match.group(1) if version_match else None
    commit, source = _commit(version_py, version, wheel.name)
    return WheelIdentity(wheel.name, sha256_file(wheel), version, commit, source)


def _read(archive: zipfile.ZipFile, names: list[str], name: str) -> str | None:
    return archive.read(name).decode(errors="replace") if name in names else None


def _commit(version_py: str | None, version: str | None, file_name: str) -> tuple[str | None, str]:
    if version_py and (found := COMMIT_ID.search(version_py)):
        return found.group(1).lower(), "vllm/_version.py __commit_id__"
    if version and (found := LOCAL_VERSION_SHA.search(version)):
        return found.group(1).lower(), "METADATA +g<sha>"
    if found := LOCAL_VERSION_SHA.search(file_name.split("-")[1] if "-" in file_name else ""):
        return found.group(1).lower(), "file name +g<sha>"
    return None, NO_COMMIT
