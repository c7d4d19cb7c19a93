#!/usr/bin/python3
"""A private munged for the tests: its own key, socket, pid and log files in one folder, so it
neither needs nor disturbs the machine's munge. The one starter for the Python tests, the soak
and, through its command line, the shell tests and the cluster bed:

    tests/munged.py start FOLDER   # prints munged's pid once its socket is up (FOLDER/munge.socket.2)
    tests/munged.py stop FOLDER    # SIGTERM to the munged of FOLDER/munged.pid, waits for it to go

start keeps a FOLDER/munge.key that is there (the cluster bed's, which its nodes share) and does
nothing but print the pid when that folder's munged still runs. Needs root (munged's key and
socket rules); exits 1 saying why munged did not start. munged wants its socket folder writable
by root only and mode 0755: start makes FOLDER so, the caller its parent (where other uids must
reach the socket).
"""
import os
import signal
import subprocess
import sys
import time


def _alive(pid):
    """Whether pid runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


class Munged:
    """The munged of FOLDER: socket FOLDER/munge.socket.2, key FOLDER/munge.key, pid its pid
    (0 when it does not run)."""

    def __init__(self, folder):
        self.folder = folder
        self.socket = os.path.join(folder, "munge.socket.2")
        self.pid_file = os.path.join(folder, "munged.pid")
        self.pid = self._running()

    def start(self):
        """Starts it unless it runs; returns self. Raises RuntimeError with munged's own words
        when it does not start within 5 s."""
        if self.pid:
            return self
        os.makedirs(self.folder, exist_ok=True)
        os.chmod(self.folder, 0o755)
        key = os.path.join(self.folder, "munge.key")
        if not os.path.exists(key) or os.path.getsize(key) == 0:
            with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o400), "wb") as f:
                f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        log = os.path.join(self.folder, "munged.log")
        run = subprocess.run(["munged", "--force", f"--socket={self.socket}", f"--key-file={key}",
                              f"--pid-file={self.pid_file}", f"--log-file={log}",
                              f"--seed-file={os.path.join(self.folder, 'munged.seed')}"],
                             capture_output=True, text=True)
        for _ in range(100):
            self.pid = self._running()
            if self.pid and os.path.exists(self.socket):
                return self
            time.sleep(0.05)
        said = open(log).read()[-2000:] if os.path.exists(log) else ""
        raise RuntimeError(f"munged did not start in {self.folder}: {run.stderr.strip()} "
                           f"{said}".strip())

    def _running(self):
        """The pid of this folder's munged while it runs, else 0."""
        try:
            with open(self.pid_file) as f:
                pid = int(f.read())
        except (OSError, ValueError):
            return 0
        return pid if _alive(pid) else 0

    def stop(self):
        """SIGTERM and SIGCONT (a munged a test stopped takes the TERM once it goes on), then
        waits up to 10 s until munged has gone; SIGKILL after that."""
        pid = self._running()
        self.pid = 0
        if not pid:
            return
        for sig in (signal.SIGTERM, signal.SIGCONT):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                return
        for _ in range(200):
            if not _alive(pid):
                return
            time.sleep(0.05)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def main(argv):
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print("usage: tests/munged.py start|stop FOLDER", file=sys.stderr)
        return 2
    try:
        if argv[0] == "start":
            print(Munged(argv[1]).start().pid)
        else:
            Munged(argv[1]).stop()
    except (RuntimeError, OSError) as e:
        print(f"munged.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
