"""A real OpenSSH server on 127.0.0.1, made for one test module: its own host key, one authorized key.

The ssh node runtime is tested against this machine's own sshd (openssh-server), started in the
foreground as a child of the test (``sshd -D``) on a free loopback port, with a host key and a
user key generated in the test's temp directory; the client trusts exactly that host key
(``StrictHostKeyChecking=yes`` against a known_hosts written here). Nothing listens beyond
127.0.0.1 and everything is removed when the module ends.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.keys import ssh_keygen

SSHD = "/usr/sbin/sshd"


@dataclass(frozen=True)
class LoopbackSshd:
    port: int
    destination: str  # ssh://root@127.0.0.1:PORT
    options: tuple[str, ...]  # identity, known hosts, strict checking


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def sshd_available() -> str | None:
    """None when a loopback sshd can be started here, else why not."""
    if not Path(SSHD).is_file():
        return f"{SSHD} is not installed (apt-get install openssh-server)"
    if shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        return "ssh or ssh-keygen is not installed (apt-get install openssh-client)"
    return None


def start_loopback_sshd(workdir: Path) -> Iterator[LoopbackSshd]:
    """A generator: yields the running server, stops it when resumed."""
    workdir.mkdir(parents=True, exist_ok=True)
    for key in ("host_key", "user_key"):
        ssh_keygen(workdir / key)
    (workdir / "authorized_keys").write_text((workdir / "user_key.pub").read_text())
    (workdir / "authorized_keys").chmod(0o600)
    port = _free_port()
    (workdir / "sshd_config").write_text(
        f"ListenAddress 127.0.0.1\nPort {port}\nHostKey {workdir / 'host_key'}\n"
        f"AuthorizedKeysFile {workdir / 'authorized_keys'}\nPidFile {workdir / 'sshd.pid'}\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
        "PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nMaxStartups 50:30:100\nMaxSessions 50\n"
    )
    host_key = (workdir / "host_key.pub").read_text().split()
    (workdir / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n")
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
    proc = subprocess.Popen([SSHD, "-D", "-f", str(workdir / "sshd_config"), "-E", str(workdir / "sshd.log")])
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"sshd did not start: {(workdir / 'sshd.log').read_text()[-1000:]}") from None
                time.sleep(0.2)
        yield LoopbackSshd(
            port=port,
            destination=f"ssh://root@127.0.0.1:{port}",
            options=(
                "-i",
                str(workdir / "user_key"),
                "-o",
                f"UserKnownHostsFile={workdir / 'known_hosts'}",
                "-o",
                "StrictHostKeyChecking=yes",
                "-o",
                "LogLevel=ERROR",
            ),
        )
    finally:
        proc.terminate()
        proc.wait(10)
