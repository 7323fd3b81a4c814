"""Two hosts on one machine, so a holder can be cut off, not only killed
(chapter 10).

A host is a Linux network namespace joined to the machine by one veth pair:
processes ``run`` on it see the machine at the host's ``gateway`` address,
where the database server and the supplier listen, and nothing else. Then:

* ``cut`` takes the machine's end of the pair down. Packets to and from the
  host are dropped without a word, as in a real partition: an open TCP
  connection does not fail, it hangs and retransmits. ``restore`` brings the
  link back and the retransmissions get through: late writes arrive.
* ``kill_host`` SIGKILLs every process of the host at once. That alone is
  NOT a dead machine: the host's kernel lives on (it is this machine's) and
  closes the killed processes' sockets with FIN or RST, so the server hears
  of the death at once. ``die`` cuts the link FIRST and then kills: nothing
  leaves the host any more, as when a machine loses power, and the server
  keeps each of its connections (and the locks of an open transaction) until
  a timeout of its own ends it.

Namespaces need Linux and root (``unavailable`` says why not). Without them
``hosts(..., isolate=False)`` gives hosts that share the machine's network:
``cut`` freezes the host's processes with SIGSTOP and ``restore`` thaws them
(the paused-process case), and ``Host.mode`` says which of the two ran.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from crashcourse.lab.processes import (
    wait_gone,
    wait_group_continued,
    wait_group_stopped,
)
from crashcourse.waiting import wait_until

NETNS, FROZEN = "netns", "frozen"  # how a host is separated from the others
SUBNET = "10.231"  # host N is 10.231.N.0/30: .1 the machine's end, .2 the host's
# Held while a run picks its free subnets and takes them: two runs at once (a
# notebook and a test, side by side) would otherwise both pick the same N and
# put one address on two links, each run's cut then breaking the other's.
SUBNETS_LOCK = "/tmp/crashcourse-hosts.lock"
LOCK_WAIT_S = 120.0


@dataclass
class Host:
    """One host: where its processes run and how they reach the machine.

    Introduced in chapter 10."""

    name: str
    mode: str               # NETNS, or FROZEN where namespaces are unavailable
    gateway: str            # the machine as this host reaches it
    address: str            # the host's own address
    netns: str | None = None
    link: str | None = None  # the machine's end of the veth pair
    started: list[subprocess.Popen] = field(default_factory=list)
    is_cut: bool = False


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True,
                          check=check, timeout=30)


def unavailable() -> str | None:
    """Why network namespaces cannot be made here, or None: they can.

    Tries one for real (a container may forbid it even to root). Chapter 10."""
    if not sys.platform.startswith("linux"):
        return f"network namespaces are Linux only (this is {sys.platform})"
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "no `ip` command (apt-get install iproute2)"
    probe = f"cc{os.getpid()}probe"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"`ip netns add` refused: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def _free_subnets(count: int) -> list[int]:
    """``count`` numbers N whose 10.231.N.0/30 no interface here uses yet."""
    used = _ip("-o", "-4", "addr").stdout
    free = [n for n in range(1, 255) if f" {SUBNET}.{n}." not in used]
    return free[:count]


@contextmanager
def subnets_held() -> Iterator[None]:
    """This machine's lock on picking and taking subnets (``SUBNETS_LOCK``):
    the check for a free N and the address put on it are one step."""
    fd = os.open(SUBNETS_LOCK, os.O_RDWR | os.O_CREAT, 0o600)

    def taken() -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    try:  # another run holds it for a few ``ip`` calls (30 s each at most)
        wait_until(taken, LOCK_WAIT_S, interval=0.01, what=SUBNETS_LOCK)
        yield
    finally:
        os.close(fd)  # the lock goes with the descriptor


def _make_netns(name: str, number: int) -> Host:
    """A namespace, a veth pair into it, an address at each end, links up."""
    tag = f"cc{os.getpid()}{name}"[:13]  # an interface name has <= 15 bytes
    netns, outside, inside = tag, f"{tag}o", f"{tag}i"
    gateway, address = f"{SUBNET}.{number}.1", f"{SUBNET}.{number}.2"
    host = Host(name, NETNS, gateway, address, netns, outside)
    _ip("netns", "add", netns)
    try:
        _ip("link", "add", outside, "type", "veth", "peer", "name", inside,
            "netns", netns)
        _ip("addr", "add", f"{gateway}/30", "dev", outside)
        _ip("link", "set", outside, "up")
        _ip("-n", netns, "addr", "add", f"{address}/30", "dev", inside)
        _ip("-n", netns, "link", "set", inside, "up")
        _ip("-n", netns, "link", "set", "lo", "up")
    except BaseException:
        _remove(host)
        raise
    return host


def make(names: tuple[str, ...] = ("a", "b"), *, isolate: bool | None = None
         ) -> list[Host]:
    """One host per name. ``isolate``: True needs namespaces, False never
    uses them, None uses them where they work (chapter 10)."""
    reason = unavailable() if isolate is not False else "not asked for"
    if isolate and reason:
        raise RuntimeError(f"cannot make separate hosts: {reason}")
    if reason:
        return [Host(name, FROZEN, "127.0.0.1", "127.0.0.1") for name in names]
    made: list[Host] = []
    try:
        with subnets_held():
            for name, number in zip(names, _free_subnets(len(names)), strict=True):
                made.append(_make_netns(name, number))
    except BaseException:
        remove(made)
        raise
    return made


def run(host: Host, argv: list[str], **popen) -> subprocess.Popen:
    """Start ``argv`` on ``host``, in a process group of its own (chapter 10)."""
    if host.mode == NETNS:  # `ip netns exec` execs argv: the pid is argv's own
        argv = ["ip", "netns", "exec", host.netns, *argv]
    process = subprocess.Popen(argv, start_new_session=True, **popen)
    host.started.append(process)
    return process


def _signal_groups(host: Host, signum: int) -> None:
    """``signum`` to the process group of everything started on ``host``."""
    for process in host.started:
        if process.poll() is None:
            try:
                os.killpg(process.pid, signum)
            except ProcessLookupError:
                pass  # exited between the poll and the signal


def _link_state(host: Host) -> str:
    with open(f"/sys/class/net/{host.link}/operstate") as state:
        return state.read().strip()


# A stop or a kill takes effect in milliseconds; the bound only catches a hang,
# so it is sized for a machine at load 10, not for the usual case.
SIGNAL_WAIT_S = 30.0


def _wait_stopped(host: Host, timeout: float = SIGNAL_WAIT_S) -> None:
    """A signal is delivered when the kernel next runs the process: wait
    (bounded) until every process in the group of each one started on
    ``host`` shows stopped (T); the exited ones have nothing left to stop."""
    for process in host.started:
        if process.poll() is None:
            wait_group_stopped(process.pid, timeout,
                               what=f"host {host.name}'s pid {process.pid}")


def cut(host: Host) -> None:
    """Partition ``host`` from the machine (FROZEN: stop its processes).

    Introduced in chapter 10."""
    if host.mode == NETNS:
        _ip("link", "set", host.link, "down")
    else:
        _signal_groups(host, signal.SIGSTOP)
        _wait_stopped(host)
    host.is_cut = True


def restore(host: Host, timeout: float = SIGNAL_WAIT_S) -> None:
    """Join ``host`` again, and wait (bounded) until its link carries packets
    (FROZEN: let its processes run on). Introduced in chapter 10."""
    if host.mode == NETNS:
        _ip("link", "set", host.link, "up")
        wait_until(lambda: _link_state(host) == "up", timeout, interval=0.01,
                   what=f"{host.link} up")
    else:
        _signal_groups(host, signal.SIGCONT)
        for process in host.started:  # running again before we say so
            if process.poll() is None:
                wait_group_continued(process.pid, timeout,
                                     what=f"host {host.name}'s pid {process.pid}")
    host.is_cut = False


def _pids_in(host: Host) -> list[int]:
    """Every process in the host's namespace (started by us or by ours)."""
    listed = _ip("netns", "pids", host.netns, check=False).stdout.split()
    return [int(pid) for pid in listed]


def kill_host(host: Host, timeout: float = SIGNAL_WAIT_S) -> int:
    """SIGKILL every process of ``host``; how many there were (chapter 10).

    The host's kernel stays up and closes their connections at once: a
    crashed program, not a dead machine (``die``)."""
    victims = {process.pid for process in host.started if process.poll() is None}
    if host.mode == NETNS:  # also any that left their group: still on the host
        victims |= set(_pids_in(host))
    _signal_groups(host, signal.SIGKILL)
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for process in host.started:
        process.wait(timeout)  # reaped: no zombie is left behind
    for pid in victims:  # not our children: SIGKILL is delivered, not done
        wait_gone(pid, timeout, what=f"host {host.name}'s pid {pid}")
    host.started.clear()
    return len(victims)


def die(host: Host) -> int:
    """A dead machine: the link goes silent, THEN every process is killed;
    how many there were (chapter 10). Nothing the host's kernel sends after
    that reaches anyone. FROZEN hosts have no link of their own: there the
    kill is heard at once, as ``kill_host``'s is. ``restore`` the link
    before the host is used again."""
    cut(host)  # FROZEN: SIGSTOP first, which changes nothing for the kill
    return kill_host(host)


def _remove(host: Host) -> None:
    """Delete the namespace; its end of the veth pair goes with it."""
    _ip("netns", "del", host.netns, check=False)
    _ip("link", "del", host.link, check=False)  # gone already, unless moved


def remove(hosts: list[Host]) -> None:
    """Kill every process on ``hosts``, then delete them, each whatever
    happened to the one before (chapter 10)."""
    for host in hosts:
        try:
            kill_host(host)  # SIGKILL ends a stopped (FROZEN, cut) process too
        finally:
            if host.mode == NETNS:
                _remove(host)


@contextmanager
def hosts(names: tuple[str, ...] = ("a", "b"), *, isolate: bool | None = None
          ) -> Iterator[list[Host]]:
    """``make(names)`` for the length of a block; ``remove`` however it ends.

    Introduced in chapter 10."""
    made = make(names, isolate=isolate)
    try:
        yield made
    finally:
        remove(made)
