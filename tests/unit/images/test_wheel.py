"""The commit and sha256 a contributor's wheel carries, as the image labels will record them."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from byog.core.errors import UsageError
from byog.images.wheel import NO_COMMIT, read_wheel_identity

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def make_wheel(path: Path, version: str, version_py: str | None) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(
            f"vllm-{version}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n"
        )
        if version_py is not None:
            archive.writestr("vllm/_version.py", version_py)
    return path


def test_commit_id_in_version_py(tmp_path: Path) -> None:
    wheel = make_wheel(
        tmp_path / "vllm-0.32.0-cp38-abi3-linux_x86_64.whl",
        "0.32.0",
        f"__version__ = version = '0.32.0'\n__commit_id__ = commit_id = '{COMMIT}'\n",
    )
    found = read_wheel_identity(wheel)
    assert (found.commit, found.commit_source, found.version) == (COMMIT, "vllm/_version.py __commit_id__", "0.32.0")
    assert found.sha256 == hashlib.sha256(wheel.read_bytes()).hexdigest()


def test_local_version_only(tmp_path: Path) -> None:
    wheel = make_wheel(
        tmp_path / "vllm-0.32.1.dev3+gabc1234d-cp38-abi3-linux_x86_64.whl", "0.32.1.dev3+gabc1234d", None
    )
    found = read_wheel_identity(wheel)
    assert (found.commit, found.commit_source) == ("abc1234d", "METADATA +g<sha>")


def test_neither_is_no_commit(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "vllm-0.32.0-cp38-abi3-linux_x86_64.whl", "0.32.0", "__version__ = '0.32.0'\n")
    found = read_wheel_identity(wheel)
    assert (found.commit, found.commit_source) == (None, NO_COMMIT)


def test_not_a_wheel_is_one_sentence(tmp_path: Path) -> None:
    bogus = tmp_path / "vllm-0.32.0-py3-none-any.whl"
    bogus.write_text("not a zip")
    with pytest.raises(UsageError) as err:
        read_wheel_identity(bogus)
    assert "is not a wheel" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "name",
    [
        "vllm-0.32.0-py3-none-any\nRUN touch pwned.whl",  # packaging accepts a newline inside a tag
        "vllm-0.32.0-py3-none-any .whl",
        'vllm-0.32.0-py3-none-any";x.whl',
        "vllm-0.32.0-py3-none-any;x.whl",
        'vl"lm-0.32.0-py3-none-any.whl',
        "vllm-0.32.0.whl",  # no tags: not a wheel name
        "vllm-0.32.0-1\nRUN x-py3-none-any.whl",  # packaging's own message quotes the newline
    ],
)
def test_a_wheel_name_that_is_not_plain_is_refused_escaped(tmp_path: Path, name: str) -> None:
    wheel = make_wheel(tmp_path / "w.whl", "0.32.0", None).rename(tmp_path / name)
    with pytest.raises(UsageError) as err:
        read_wheel_identity(wheel)
    assert "\n" not in str(err.value) and "wheel file name" in str(err.value)


def test_a_metadata_bomb_is_read_bounded(tmp_path: Path) -> None:
    """A METADATA that inflates past the bound is refused after reading the bound, not inflated whole."""
    wheel = tmp_path / "vllm-0.32.0-py3-none-any.whl"
    with (
        zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as archive,
        archive.open("vllm-0.32.0.dist-info/METADATA", "w", force_zip64=True) as member,
    ):
        member.write(b"Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0\n")
        zeros = b"\0" * (1 << 20)
        for _ in range(64):  # 64 MiB inflated, ~64 kB in the wheel
            member.write(zeros)
    assert wheel.stat().st_size < 1 << 20
    with pytest.raises(UsageError, match="inflates to more than 1 MiB"):
        read_wheel_identity(wheel)
