"""Node runtimes on real processes (no vLLM): what a node starts is gone after stop, close, or byog's death.

Local nodes are process groups on this machine; ssh nodes go through a real sshd on 127.0.0.1
(tests/support_sshd.py). The command each test starts leaves a child in its group and another
that escapes it with ``setsid`` (as Ray's daemons do): ``close`` must find both by the node's
marker. Seconds each; no lock needed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from byog.runtimes.nodes import LocalNodes, marked_processes
from byog.runtimes.ssh_nodes import SshNodes
from tests.support.sshd import LoopbackSshd, sshd_available, start_loopback_sshd

pytestmark = pytest.mark.cluster

# A command with one child in its group and one that escapes into a session of its own.
FAMILY = ["sh", "-c", "sleep 300 & setsid sleep 301 & wait"]


@pytest.fixture(scope="module")
def sshd(tmp_path_factory) -> Iterator[LoopbackSshd]:
    why = sshd_available()
    if why:
        if os.environ.get("BYOG_REQUIRE_SSH") == "1":
            pytest.fail(why)
        pytest.skip(why)
    yield from start_loopback_sshd(tmp_path_factory.mktemp("sshd"))


def runtimes(sshd: LoopbackSshd | None):
    return {"local": (LocalNodes(), None), "ssh": (SshNodes(list(sshd.options)), sshd.destination)}


def wait_for(predicate, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


@pytest.mark.parametrize("kind", ["local", "ssh"])
def test_close_leaves_nothing_even_what_left_the_group(kind: str, sshd, tmp_path: Path) -> None:
    runtime, host = runtimes(sshd)[kind]
    marker = f"t-close-{kind}-{os.getpid()}"
    node = runtime.open(0, host, [], marker)
    code, out = node.run(["sh", "-c", "echo $BYOG_NODE"])
    assert code == 0 and out.strip() == marker
    proc = node.spawn("family", FAMILY, {"EXTRA": "a b"}, tmp_path / "family.log")
    # the family: sh + 2 sleeps (over ssh the node's wrapper and its watcher carry the marker too)
    assert wait_for(lambda: [p.name() for p in marked_processes(marker)].count("sleep") == 2), marked_processes(marker)
    # every process running the family's command line carries the marker (over ssh: setsid's own too)
    import psutil

    marked = {p.pid for p in marked_processes(marker)}
    carrying = [p for p in psutil.process_iter(["pid", "cmdline"]) if FAMILY[2] in (p.info["cmdline"] or [])]
    assert carrying and [p.pid for p in carrying if p.pid not in marked] == [], carrying
    assert proc.alive()
    started = time.monotonic()
    node.close()
    assert time.monotonic() - started < 15
    assert not proc.alive()
    assert marked_processes(marker) == []


@pytest.mark.parametrize("kind", ["local", "ssh"])
def test_a_dying_command_is_seen_dead(kind: str, sshd, tmp_path: Path) -> None:
    runtime, host = runtimes(sshd)[kind]
    node = runtime.open(0, host, [], f"t-exit-{kind}-{os.getpid()}")
    proc = node.spawn("short", ["sh", "-c", "echo bye; exit 3"], {}, tmp_path / "short.log")
    assert wait_for(lambda: not proc.alive())
    assert proc.record()["returncode"] == 3
    assert "bye" in (tmp_path / "short.log").read_text()
    node.close()


@pytest.mark.parametrize("kind", ["local", "ssh"])
def test_a_process_restarted_on_the_same_log_is_not_read_as_the_one_before(kind: str, sshd, tmp_path: Path) -> None:
    """A cluster restart appends a node's new process to its old log, which ends with the old exit."""
    runtime, host = runtimes(sshd)[kind]
    node = runtime.open(0, host, [], f"t-again-{kind}-{os.getpid()}")
    log = tmp_path / "node1.log"
    first = node.spawn("first", ["sh", "-c", "exit 0"], {}, log)
    assert wait_for(lambda: not first.alive()) and first.record()["returncode"] == 0
    second = node.spawn("second", ["sleep", "300"], {}, log)
    assert second.alive() and second.record()["returncode"] is None
    if kind == "ssh":
        assert wait_for(lambda: second.pid() is not None) and second.pid() != first.pid()
    node.close()
    assert not second.alive()


CHILD = """
import sys, time
from pathlib import Path
from byog.runtimes.nodes import LocalNodes
from byog.runtimes.ssh_nodes import SshNodes
kind, host, marker, log = sys.argv[1:5]
runtime = LocalNodes() if kind == "local" else SshNodes(sys.argv[5:])
runtime.open(0, host if host != "-" else None, [], marker).spawn("sleeper", ["sleep", "303"], {}, Path(log))
print("spawned", flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("kind", ["local", "ssh"])
def test_a_killed_byog_takes_its_nodes_with_it(kind: str, sshd, tmp_path: Path) -> None:
    """SIGKILL to byog: PDEATHSIG ends the local group, or ssh, whose closed channel ends the remote one."""
    _, host = runtimes(sshd)[kind]
    marker = f"t-orphan-{kind}-{os.getpid()}"
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CHILD,
            kind,
            host or "-",
            marker,
            str(tmp_path / "s.log"),
            *(sshd.options if kind == "ssh" else []),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert child.stdout.readline().strip() == "spawned"
    assert wait_for(lambda: bool(marked_processes(marker)))
    child.kill()
    child.wait()
    assert wait_for(lambda: marked_processes(marker) == [], timeout_s=15), marked_processes(marker)


@pytest.mark.parametrize("kind", ["local", "ssh"])
def test_environment_and_arguments_arrive_verbatim(kind: str, sshd, tmp_path: Path) -> None:
    """Values pass two shells over ssh (the login shell, the wrapper): quoting must survive both."""
    runtime, host = runtimes(sshd)[kind]
    node = runtime.open(0, host, [1, 3], f"t-quote-{kind}-{os.getpid()}")
    tricky = "a 'b' \"c\" $HOME `x` ; d"
    code, out = node.run(
        ["sh", "-c", 'printf "%s|%s|%s" "$X" "$1" "$CUDA_VISIBLE_DEVICES"', "sh", tricky], {"X": tricky}
    )
    assert code == 0 and out == f"{tricky}|{tricky}|1,3"
    proc = node.spawn("q", ["sh", "-c", 'printf "%s\\n" "$X"'], {"X": tricky}, tmp_path / "q.log")
    assert wait_for(lambda: not proc.alive())
    assert tricky in (tmp_path / "q.log").read_text().splitlines()
    node.close()


@pytest.mark.parametrize("kind", ["local", "ssh"])
def test_a_close_that_cannot_clear_its_node_says_so_in_one_sentence(
    kind: str, sshd, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Something without the marker keeps starting processes with it (nothing byog can sweep away):
    close says it cannot vouch for the node instead of returning as if it were clear."""
    from byog.core.errors import EnvironmentProblem
    from byog.runtimes import nodes, ssh_nodes

    monkeypatch.setattr(nodes, "SWEEP_PASSES", 2)
    monkeypatch.setattr(ssh_nodes, "SWEEP_PASSES", 2)
    runtime, host = runtimes(sshd)[kind]
    marker = f"t-respawn-{kind}-{os.getpid()}"
    # four loops, each starting the next marked sleep the moment the last one dies: one of them is
    # back within the sweep's pause between passes
    loop = f"while :; do env BYOG_NODE={marker} sleep 30; done"
    spawner = subprocess.Popen(["sh", "-c", " & ".join([f"({loop})"] * 4) + " & wait"], start_new_session=True)
    try:
        assert wait_for(lambda: len(marked_processes(marker)) > 0)
        with pytest.raises(EnvironmentProblem) as raised:
            runtime.open(0, host, [], marker).close()
        said = str(raised.value)
        assert said.startswith("node 0 (") and "cannot say its processes are gone (" in said and "\n" not in said
        assert "still there after 2 passes:" in said and f"BYOG_NODE={marker}" in said
    finally:
        os.killpg(spawner.pid, 9)
        spawner.wait()
        nodes.kill_marked(marker)
    if kind == "ssh":
        unreachable = SshNodes([*sshd.options, "-o", "ConnectTimeout=5"]).open(0, "ssh://root@127.0.0.1:1", [], marker)
        with pytest.raises(EnvironmentProblem, match=r"the sweep exited 255"):
            unreachable.close()
