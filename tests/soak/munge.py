"""munge for the soak: a private munged (tests/munged.py, its own key and socket in the soak's
temporary directory) and credential workers, one process per uid, forked from the soak and
switched to that uid, that encode credentials through libmunge (ctypes) on request: a process
per credential (`munge -s`) would cost more than the daemon."""
import asyncio
import ctypes
import multiprocessing
import os
import shutil
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from munged import Munged  # noqa: E402

OWNER, OTHER = 1001, 1002  # the uid whose jobs the soak loads, and the uid refused from them
MUNGE_OPT_TTL, MUNGE_OPT_SOCKET = 4, 8  # munge.h


def payload(job, rank):
    """What binds a credential to one register (proto::munge_payload)."""
    return "dbs-register v2 job=%s rank=%d" % (job, rank)


def unavailable(sched):
    """Why the soak cannot use munge on this machine, or None."""
    if os.geteuid() != 0:
        return "needs root to encode credentials as uids %d and %d" % (OWNER, OTHER)
    if shutil.which("munged") is None:
        return "munged missing (apt-get install munge)"
    try:
        ctypes.CDLL("libmunge.so.2")
    except OSError:
        return "libmunge.so.2 missing (apt-get install libmunge2)"
    # serve checks --auth before it binds: a bad address shows whether munge is built.
    out = subprocess.run([sched, "serve", "--auth", "munge", "--listen", "127.0.0.1:no-port"],
                         capture_output=True, text=True)
    if "munge is not built" in out.stdout + out.stderr:
        return "dbs-scheduler built without libmunge (-Dmunge)"
    return None


def start_munged(tmp):
    """The private munged of tests/munged.py under `tmp` (which the workers' uids must reach)."""
    os.chmod(tmp, 0o755)
    return Munged(os.path.join(tmp, "munge")).start()


def _worker(uid, socket, conn):
    """Encodes credentials as uid: receives (payload, ttl_s), sends ("ok", credential) or
    ("error", message); None ends it."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    lib = ctypes.CDLL("libmunge.so.2")
    libc = ctypes.CDLL(None)
    lib.munge_ctx_create.restype = ctypes.c_void_p
    lib.munge_strerror.restype = ctypes.c_char_p
    lib.munge_encode.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
                                 ctypes.c_char_p, ctypes.c_int]
    contexts = {}

    def context(ttl):
        if ttl not in contexts:
            ctx = lib.munge_ctx_create()
            lib.munge_ctx_set(ctypes.c_void_p(ctx), ctypes.c_int(MUNGE_OPT_SOCKET),
                              ctypes.c_char_p(socket.encode()))
            if ttl:
                lib.munge_ctx_set(ctypes.c_void_p(ctx), ctypes.c_int(MUNGE_OPT_TTL),
                                  ctypes.c_int(ttl))
            contexts[ttl] = ctx
        return contexts[ttl]

    while (request := conn.recv()) is not None:
        data, ttl = request
        cred = ctypes.c_void_p()
        e = lib.munge_encode(ctypes.byref(cred), context(ttl), data.encode(), len(data))
        if e != 0:
            conn.send(("error", "munge_encode as uid %d: %s" % (uid, lib.munge_strerror(e).decode())))
            continue
        conn.send(("ok", ctypes.string_at(cred.value).decode()))
        libc.free(cred)


class Credentials:
    """Credentials of the uids given, from one worker process each."""

    def __init__(self, socket, uids):
        ctx = multiprocessing.get_context("fork")
        self.workers = {}
        for uid in uids:
            ours, theirs = ctx.Pipe()
            p = ctx.Process(target=_worker, args=(uid, socket, theirs), daemon=True)
            p.start()
            self.workers[uid] = (p, ours, threading.Lock())

    def encode(self, uid, data, ttl_s=0):
        """A credential of uid carrying data; RuntimeError when munged refuses."""
        _, conn, lock = self.workers[uid]
        with lock:
            conn.send((data, ttl_s))
            status, text = conn.recv()
        if status != "ok":
            raise RuntimeError(text)
        return text

    async def auth(self, uid, job, rank, ttl_s=0):
        """A register's "auth" field: uid's credential for rank `rank` of `job`."""
        return "munge:" + await asyncio.to_thread(self.encode, uid, payload(job, rank), ttl_s)

    def stop(self):
        for p, conn, lock in self.workers.values():
            with lock:
                conn.send(None)
            p.join(timeout=5)
