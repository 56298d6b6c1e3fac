# SPDX-License-Identifier: GPL-2.0-or-later
"""One container's shim, as containerd-shim is for a real one: it starts
the container's process and outlives nothing it started.

  python3 shim.py CWD LOG -- COMMAND [ARG...]

It makes itself the child subreaper (containerd's shim does the same), so
that every process the container starts, even a daemonised grandchild such
as slurmd's slurmstepd, stays below it.  Stands in for the container's
cgroup, which the test machine may not let us create:
- SIGTERM is passed to the container's main process (kubelet's stop);
- SIGUSR1 kills every process below the shim (the grace period is over);
- when the main process exits, every process left below the shim is
  killed, as containerd does for a container without its own PID
  namespace (hostPID: the kernel would not do it), and the shim exits
  with the main process's status (128 + signal when killed)."""

import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def descendants(root):
    """Pids below `root`, from /proc's parent links."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            out.append(pid)
            todo.append(pid)
    return out


def kill_all(sig=signal.SIGKILL):
    """Until nothing is left below the shim (a process may fork while
    it is being killed); reaps them too."""
    me = os.getpid()
    for _ in range(100):
        pids = descendants(me)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        reap()
        time.sleep(0.05)


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main(argv):
    cwd, log, sep, *cmd = argv
    if sep != "--" or not cmd:
        sys.exit("usage: shim.py CWD LOG -- COMMAND [ARG...]")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit(f"shim: prctl: {os.strerror(ctypes.get_errno())}")
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
    pid = os.fork()
    if pid == 0:
        try:
            os.chdir(cwd)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.setsid()
            os.execvpe(cmd[0], cmd, os.environ)
        except OSError as err:
            os.write(2, f"shim: exec {cmd[0]}: {err}\n".encode())
        os._exit(127)
    os.close(fd)
    signal.signal(signal.SIGTERM, lambda *_: _send(pid, signal.SIGTERM))
    signal.signal(signal.SIGUSR1, lambda *_: kill_all())
    while True:   # reaps the orphans it inherits too (ended steps)
        try:
            got, status = os.waitpid(-1, 0)
        except ChildProcessError:
            status = 0
            break
        if got == pid:
            break
    kill_all()
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _send(pid, sig):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
