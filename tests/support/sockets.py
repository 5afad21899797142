"""Which processes own which loopback TCP sockets, read from /proc (Linux).

Crash and worker tests use it to tell which process is serving a request or talking to a
server, e.g. the gunicorn worker holding a submit, or the Celery worker calling the judge.
"""
import os
from pathlib import Path


def socket_owners(pids, wanted) -> set[int]:
    """Which of ``pids`` own an IPv4 TCP socket for which
    ``wanted(local_port, remote_port, state)`` (state as in /proc/net/tcp, "01" = established)."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        cols = line.split()
        local, remote = (int(cols[i].split(":")[1], 16) for i in (1, 2))
        if wanted(local, remote, cols[3]):
            inodes.add(cols[9])
    owners = set()
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                owners.add(pid)
                break
    return owners
