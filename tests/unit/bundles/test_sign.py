"""SSH signing with the real ssh-keygen: keys from config, agent keys, allowed signers, keys add."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from byog.bundles.keys import add_github_user, add_keys, fetch_signing_keys
from byog.bundles.sign import (
    NAMESPACE,
    SigningKey,
    configured_key,
    sign_bytes,
    verify_signature,
)
from byog.core.errors import CheckFailed, EnvironmentProblem, UsageError
from tests.support.keys import allowed_signers, make_key


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HOME / XDG config and no git signing config, so only what a test sets counts."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "home" / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("BYOG_SIGNING_KEY", raising=False)
    monkeypatch.chdir(tmp_path)  # not inside the byog checkout, whose .git/config might sign
    (tmp_path / "home" / ".config").mkdir(parents=True)
    return tmp_path / "home"


def test_sign_and_verify_names_the_signer(tmp_path: Path) -> None:
    key, public = make_key(tmp_path, "alice")
    signature = sign_bytes(b"manifest bytes", key)
    assert signature.startswith(b"-----BEGIN SSH SIGNATURE-----")
    assert sign_bytes(b"manifest bytes", key) == signature  # Ed25519: deterministic
    allowed = allowed_signers(
        tmp_path / "allowed", [("bob@example.com", make_key(tmp_path, "bob")[1]), ("alice@example.com", public)]
    )
    result = verify_signature(b"manifest bytes", signature, allowed)
    assert result.principal == "alice@example.com" and result.fingerprint == key.fingerprint()
    with pytest.raises(CheckFailed, match="not a valid byog-bundle@v1 SSH signature"):
        verify_signature(b"other bytes", signature, allowed)


def test_wrong_signer_and_wrong_namespace_are_refused(tmp_path: Path) -> None:
    alice, alice_pub = make_key(tmp_path, "alice")
    mallory, _ = make_key(tmp_path, "mallory")
    allowed = allowed_signers(tmp_path / "allowed", [("alice@example.com", alice_pub)])
    with pytest.raises(CheckFailed, match="wrong signer"):
        verify_signature(b"m", sign_bytes(b"m", mallory), allowed)
    other_ns = tmp_path / "allowed-other-ns"
    other_ns.write_text(f'alice@example.com namespaces="git" {alice_pub}\n')
    with pytest.raises(CheckFailed, match="not for namespace"):
        verify_signature(b"m", sign_bytes(b"m", alice), other_ns)
    # A signature made for another namespace (e.g. a git commit signature) is not a bundle signature.
    git_sig = subprocess.run(
        ["ssh-keygen", "-Y", "sign", "-q", "-f", str(alice.path), "-n", "git"],
        input=b"m",
        capture_output=True,
        check=True,
    ).stdout
    with pytest.raises(CheckFailed, match="not a valid"):
        verify_signature(b"m", git_sig, allowed)


def test_agent_key_signs_with_only_the_public_half(tmp_path: Path) -> None:
    key, public = make_key(tmp_path, "agentkey")
    agent = subprocess.run(["ssh-agent", "-s"], capture_output=True, text=True, check=True).stdout
    env = dict(line.split(";")[0].split("=", 1) for line in agent.splitlines() if line.startswith("SSH_"))
    try:
        subprocess.run(["ssh-add", "-q", str(key.path)], env={**os.environ, **env}, check=True, capture_output=True)
        pub_only = tmp_path / "only.pub"
        pub_only.write_text(public + "\n")
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            signature = sign_bytes(b"agent", SigningKey(pub_only, "test"))
        finally:
            for k, v in old.items():
                os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
        allowed = allowed_signers(tmp_path / "allowed", [("agent@example.com", public)])
        assert verify_signature(b"agent", signature, allowed).principal == "agent@example.com"
    finally:
        subprocess.run(["kill", env["SSH_AGENT_PID"]], check=False)


def test_key_configuration_order(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert configured_key() is None
    git_key, _ = make_key(tmp_path, "gitkey")
    subprocess.run(["git", "config", "--global", "gpg.format", "ssh"], check=True)
    subprocess.run(["git", "config", "--global", "user.signingkey", str(git_key.path)], check=True)
    assert configured_key().path == git_key.path  # type: ignore[union-attr]
    cfg_key, _ = make_key(tmp_path, "cfgkey")
    (home / ".config" / "byog").mkdir()
    (home / ".config" / "byog" / "config").write_text(f"[signing]\nkey = {cfg_key.path}\n")
    assert configured_key().path == cfg_key.path  # type: ignore[union-attr]
    monkeypatch.setenv("BYOG_SIGNING_KEY", "~/env-key")
    assert configured_key() == SigningKey(home / "env-key", "$BYOG_SIGNING_KEY")


def test_git_literal_signing_key_is_an_agent_key(home: Path, tmp_path: Path) -> None:
    _, public = make_key(tmp_path, "literal")
    subprocess.run(["git", "config", "--global", "gpg.format", "ssh"], check=True)
    subprocess.run(["git", "config", "--global", "user.signingkey", f"key::{public} comment"], check=True)
    key = configured_key()
    assert key is not None and key.path.read_text().strip() == public and "agent" in key.source


def test_a_missing_key_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        sign_bytes(b"m", SigningKey(tmp_path / "nope", "$BYOG_SIGNING_KEY"))


def test_without_ssh_keygen_python_signs_and_forcing_ssh_keygen_is_an_environment_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, public = make_key(tmp_path, "k")
    with_ssh_keygen = sign_bytes(b"m", key)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))
    monkeypatch.delenv("BYOG_SSH_BACKEND", raising=False)
    assert sign_bytes(b"m", key) == with_ssh_keygen  # Ed25519 is deterministic: the same bytes either way
    assert key.fingerprint().startswith("SHA256:")  # no ssh-keygen -l needed
    monkeypatch.setenv("BYOG_SSH_BACKEND", "ssh-keygen")
    with pytest.raises(EnvironmentProblem, match="ssh-keygen"):
        sign_bytes(b"m", key)


class _FakeGitHub(BaseHTTPRequestHandler):
    responses: dict[str, tuple[int, bytes]] = {}

    def do_GET(self) -> None:
        status, body = self.responses.get(self.path, (404, b'{"message": "Not Found"}'))
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def github() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _FakeGitHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_keys_add_fetches_signing_keys_into_allowed_signers(github: str, tmp_path: Path) -> None:
    key, public = make_key(tmp_path, "octo")
    _FakeGitHub.responses = {
        "/users/octocat/ssh_signing_keys": (
            200,
            json.dumps([{"id": 1, "key": public + " laptop", "title": "laptop"}]).encode(),
        )
    }
    path = tmp_path / "allowed_signers"
    added = add_github_user("octocat", path, api=github)
    assert added.added == 1 and path.read_text() == f'octocat@github.com namespaces="{NAMESPACE}" {public}\n'
    again = add_github_user("octocat", path, api=github)
    assert again.added == 0 and again.already_present == 1 and path.read_text().count("\n") == 1
    assert verify_signature(b"m", sign_bytes(b"m", key), path).principal == "octocat@github.com"


def test_keys_add_refuses_hostile_answers(github: str, tmp_path: Path) -> None:
    _, public = make_key(tmp_path, "victim")
    smuggled = f"{public}\n* ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
    _FakeGitHub.responses = {
        "/users/evil/ssh_signing_keys": (200, json.dumps([{"key": smuggled}]).encode()),
        "/users/weird/ssh_signing_keys": (200, json.dumps([{"key": "cert-authority ssh-ed25519 AAAA"}]).encode()),
        "/users/notjson/ssh_signing_keys": (200, b"<html>"),
        "/users/nokeys/ssh_signing_keys": (200, b"[]"),
    }
    path = tmp_path / "allowed_signers"
    with pytest.raises(UsageError, match="not an SSH public key"):
        add_github_user("evil", path, api=github)
    with pytest.raises(UsageError, match="not an SSH public key"):
        add_github_user("weird", path, api=github)
    with pytest.raises(CheckFailed, match="JSON"):
        add_github_user("notjson", path, api=github)
    with pytest.raises(UsageError, match="no SSH signing keys"):
        add_github_user("nokeys", path, api=github)
    with pytest.raises(UsageError, match="GitHub has no user"):
        add_github_user("ghost", path, api=github)
    with pytest.raises(UsageError, match="not a GitHub user name"):
        fetch_signing_keys("../../etc", api=github)
    assert not path.exists()


def test_add_keys_never_writes_blank_lines(tmp_path: Path) -> None:
    _, public = make_key(tmp_path, "k")
    path = tmp_path / "allowed"
    path.write_text(
        "# team\n\nold@example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n\n"
    )
    add_keys(path, "new@example.com", [public])
    assert "\n\n" not in path.read_text() and path.read_text().count("\n") == 3


def test_finalize_run_signs_when_a_key_is_configured_and_says_so_when_not(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from rich.console import Console

    from byog.bundles.finalize import finalize_run
    from byog.cli.console_reporter import ConsoleReporter
    from tests.support.bundles_kit import TINY
    from tests.support.synthetic import make_run_dir

    run_dir = make_run_dir(tmp_path / "run", TINY)
    out = io.StringIO()
    bundle = finalize_run(run_dir, ConsoleReporter(Console(file=out, width=300)))
    assert bundle == run_dir.root / "bundle.tar.gz" and bundle.is_file()
    assert "NOT signed: no signing key is configured (set BYOG_SIGNING_KEY" in out.getvalue()
    assert "'key = PATH' under [signing] in ~/.config/byog/config" in out.getvalue()  # never read as rich markup
    assert not (run_dir.root / "manifest.intoto.json.sig").exists()

    key, _ = make_key(tmp_path, "alice")
    monkeypatch.setenv("BYOG_SIGNING_KEY", str(key.path))
    out = io.StringIO()
    assert finalize_run(run_dir, ConsoleReporter(Console(file=out, width=300))) == bundle
    assert f"signed with key {key.fingerprint()}" in out.getvalue()
    assert (run_dir.root / "manifest.intoto.json.sig").read_bytes().startswith(b"-----BEGIN SSH SIGNATURE-----")
    assert sorted(p.name for p in run_dir.plots_dir.iterdir()) == [
        "eval_deltas.png",
        "speedup.png",
        "tok_s_vs_batch.png",
        "tpot_distribution.png",
    ]

    monkeypatch.setenv("BYOG_SIGNING_KEY", str(tmp_path / "missing-key"))
    out = io.StringIO()
    assert finalize_run(run_dir, ConsoleReporter(Console(file=out, width=300))) is None
    assert "bundle not made:" in out.getvalue() and "missing-key" in out.getvalue()


def test_signature_file_must_be_exactly_what_ssh_keygen_wrote(tmp_path: Path) -> None:
    """ssh-keygen itself accepts a changed trailing byte; verify must not (found by flipping every byte)."""
    from byog.bundles.sign import is_canonical_armor

    key, public = make_key(tmp_path, "alice")
    signature = sign_bytes(b"m", key)
    allowed = allowed_signers(tmp_path / "allowed", [("alice@example.com", public)])
    assert is_canonical_armor(signature)
    trailing = signature[:-1] + b"\xf5"
    sig_file = tmp_path / "s.sig"
    sig_file.write_bytes(trailing)
    lenient = subprocess.run(
        [
            "ssh-keygen",
            "-Y",
            "verify",
            "-f",
            str(allowed),
            "-I",
            "alice@example.com",
            "-n",
            NAMESPACE,
            "-s",
            str(sig_file),
        ],
        input=b"m",
        capture_output=True,
    )
    print(f"ssh-keygen -Y verify on a signature with its last byte changed: exit {lenient.returncode}")
    for bad in (trailing, signature + b"\n", signature.replace(b"\n", b"\r\n"), signature.replace(b"\n", b"", 2)):
        assert not is_canonical_armor(bad)
        with pytest.raises(CheckFailed, match="exact form ssh-keygen writes"):
            verify_signature(b"m", bad, allowed)
