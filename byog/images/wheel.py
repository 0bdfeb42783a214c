"""What a contributor's vLLM wheel says it is: its sha256 and the commit it was built from.

The commit is read, in this order, from ``vllm/_version.py``'s ``__commit_id__`` inside the wheel
(what vLLM's build writes), else from a ``+g<sha>`` local version (setuptools-scm) in the wheel's
METADATA or file name. ``commit_source`` says which, so a label never passes a guess off as a fact.
"""

from __future__ import annotations

import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from byog.core.errors import UsageError
from byog.core.io import sha256_file
from byog.core.safe_text import one_line

COMMIT_ID = re.compile(r"""^__commit_id__\s*=\s*(?:commit_id\s*=\s*)?['"]([0-9a-fA-F]{7,40})['"]""", re.MULTILINE)
LOCAL_VERSION_SHA = re.compile(r"\+g([0-9a-fA-F]{7,40})(?:[.\-_]|$)")
METADATA_VERSION = re.compile(r"^Version:\s*(\S+)\s*$", re.MULTILINE)
NO_COMMIT = "no commit"
# What a wheel's file name may hold beyond what packaging checks (it accepts a newline or a space in a
# tag): the name goes into a Dockerfile and a pip URL, so nothing that a shell, Docker or a URL reads.
_SAFE_FILE_NAME = re.compile(r"[A-Za-z0-9._+!-]+\.whl")
# Read at most this much of a member (METADATA, vllm/_version.py): a zip member can inflate to
# gigabytes from a small wheel, and its declared size is the wheel's own word.
MEMBER_LIMIT_BYTES = 1 << 20


@dataclass(frozen=True)
class WheelIdentity:
    file_name: str
    sha256: str
    version: str | None
    commit: str | None  # None: the wheel names no commit
    commit_source: str  # "vllm/_version.py __commit_id__", "METADATA +g<sha>", "file name +g<sha>" or "no commit"


def file_name_problem(name: str) -> str | None:
    """Why ``name`` is not a wheel file name byog accepts (PEP 427 by ``packaging``, plain characters), or None."""
    try:
        parse_wheel_filename(name)
    except InvalidWheelFilename as err:
        return f"{name!r} is not a valid wheel file name: {one_line(err)}"
    if not _SAFE_FILE_NAME.fullmatch(name):
        return f"{name!r}: a wheel file name holds only letters, digits and . _ + ! - (rename the file)"
    return None


def checked_file_name(name: str) -> str:
    """``name``, or UsageError (one sentence, the name escaped) when ``file_name_problem`` finds one."""
    problem = file_name_problem(name)
    if problem:
        raise UsageError(f"--vllm-wheel {problem}")
    return name


def read_wheel_identity(wheel: Path) -> WheelIdentity:
    """The identity of a wheel file; UsageError (one sentence) when it is not a wheel."""
    if not wheel.is_file():
        raise UsageError(f"--vllm-wheel {wheel}: no such file")
    checked_file_name(wheel.name)
    try:
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
            version_py = _read(archive, names, "vllm/_version.py")
            metadata = next((n for n in names if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)), None)
            metadata_text = _read(archive, names, metadata) if metadata else None
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError):
        raise UsageError(f"--vllm-wheel {wheel.name} is not a wheel (not a zip archive)") from None
    if metadata_text is None:
        raise UsageError(f"--vllm-wheel {wheel.name} is not a wheel (no .dist-info/METADATA inside)")
    version_match = METADATA_VERSION.search(metadata_text)
    version = version_match.group(1) if version_match else None
    commit, source = _commit(version_py, version, wheel.name)
    return WheelIdentity(wheel.name, sha256_file(wheel), version, commit, source)


def _read(archive: zipfile.ZipFile, names: list[str], name: str) -> str | None:
    """The member's text, read from the stream up to ``MEMBER_LIMIT_BYTES`` (a bigger one is refused)."""
    if name not in names:
        return None
    with archive.open(name) as member:
        data = member.read(MEMBER_LIMIT_BYTES + 1)
    if len(data) > MEMBER_LIMIT_BYTES:
        raise UsageError(
            f"--vllm-wheel: {name} inflates to more than {MEMBER_LIMIT_BYTES >> 20} MiB: not a real wheel's"
        )
    return data.decode(errors="replace")


def _commit(version_py: str | None, version: str | None, file_name: str) -> tuple[str | None, str]:
    if version_py and (found := COMMIT_ID.search(version_py)):
        return found.group(1).lower(), "vllm/_version.py __commit_id__"
    if version and (found := LOCAL_VERSION_SHA.search(version)):
        return found.group(1).lower(), "METADATA +g<sha>"
    if found := LOCAL_VERSION_SHA.search(file_name.split("-")[1] if "-" in file_name else ""):
        return found.group(1).lower(), "file name +g<sha>"
    return None, NO_COMMIT
