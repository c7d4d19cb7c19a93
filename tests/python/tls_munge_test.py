"""A PyTorch job on a shared cluster: examples/pytorch/train.py (2 ranks started as srun starts
them, 320 samples) against dbs-scheduler serve --tls-cert/--tls-key on loopback, with a
throwaway CA made by openssl:

1. --tls-ca with the CA that signed the daemon's certificate: the ranks connect over TLS and
   every next plan comes from the daemon. The ranks prove who they are with munge (--auth
   munge, no job key; a private munged on its own socket and key, tests/munged.py) where that
   can run: as root, with munged and a dbs built with munge; elsewhere with the job's key, and
   the munge part is skipped, saying why.
2. --tls-ca with another CA: each rank says once that the daemon's certificate is not trusted
   and the embedded policy plans; the job finishes.
3. Bad values of tls_ca and auth (dbs._dbs.make_planner on two threads, one rank at fault):
   one dbs.ConfigError naming the argument on every rank, none left waiting."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from munged import Munged  # noqa: E402
from tls_certs import make_certs  # noqa: E402

harness.skip_unless_ready()
# meson's timeout sends SIGTERM: exit through the finally blocks, which stop munged and the daemon.
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

from dbs import _dbs  # noqa: E402

TRAIN = os.path.join(harness.ROOT, "examples/pytorch/train.py")


def make_tls(folder):
    """A CA (ca.pem) and a server certificate it signed (server.pem, server.key) in folder."""
    try:
        make_certs(folder)
    except RuntimeError as e:
        harness.fail(str(e))


def munge_why_not():
    """Why a private munged (tests/munged.py) cannot serve this test here, or None."""
    if os.geteuid() != 0:
        return "needs root to start a private munged"
    for tool in ("munged", "munge"):
        if shutil.which(tool) is None:
            return f"{tool} missing (apt-get install munge)"
    if not _dbs.munge_built():
        return "dbs built without munge (-Dmunge)"
    return None


def start_munged(folder):
    try:
        return Munged(folder).start()
    except RuntimeError as e:
        harness.fail(str(e))


class TlsDaemon:
    """dbs-scheduler serve on loopback over TLS (cert, key), with a token and `args`; listen is
    its HOST:PORT, log its output."""

    def __init__(self, folder, cert, key, *args):
        self.folder, self.log = folder, os.path.join(folder, "daemon.log")
        self.token = os.path.join(folder, "token")
        with open(os.open(self.token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(os.urandom(24).hex() + "\n")
        ready = os.path.join(folder, "ready.json")
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [harness.SCHEDULER, "serve", "--listen", "127.0.0.1:0", "--token-file",
                 self.token, "--tls-cert", cert, "--tls-key", key, "--ready-file", ready, *args],
                stdout=log, stderr=log)
        for _ in range(400):
            if os.path.exists(ready) and os.path.getsize(ready) > 0:
                self.listen = json.load(open(ready))["listen"]
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.025)
        self.proc.kill()
        harness.fail(f"dbs-scheduler serve did not start:\n{open(self.log).read()}")

    def job_key(self, job):
        key = subprocess.run([harness.SCHEDULER, "job-key", "--token-file", self.token, job],
                             check=True, capture_output=True, text=True).stdout
        path = os.path.join(self.folder, job + ".key")
        with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(key)
        return path

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def train(name, epochs, *args):
    """train.py on 2 ranks: (stdout, stderr); a failed run fails the test."""
    start = time.monotonic()
    rc, out, err = harness.ranks(TRAIN, "--epochs", epochs, "--train-limit", 320,
                                    "--test-limit", 64, "--threads", 1,
                                    "--scheduler-timeout", 30, *args, timeout=120)
    print(f"{name}: {epochs} epoch(s) in {time.monotonic() - start:.1f} s")
    if rc != 0:
        harness.fail(f"{name}: train.py exit {rc}\n{out[-2000:]}\n{err[-4000:]}")
    return out, err


def sources(out):
    """{epoch: source} of rank 0's 'plan of epoch N: [...] from SOURCE' lines."""
    return {int(e): s for e, s in re.findall(r"plan of epoch (\d+): \[[\d, ]+\] from (\S+)", out)}


def make_planners(args_of_rank):
    """_dbs.make_planner on two threads sharing an allgather (a barrier), rank r with the
    keyword arguments args_of_rank[r]: per rank, the planner or the exception it raised.
    Bounded: a rank left waiting fails the test."""
    barrier = threading.Barrier(2, timeout=10)
    slots = [b"", b""]

    def allgather(rank):
        def gather(data):
            slots[rank] = data
            barrier.wait()
            every = slots[0] + slots[1]
            barrier.wait()
            return every
        return gather

    results = [None, None]

    def rank_main(rank):
        try:
            results[rank] = _dbs.make_planner(_dbs.Settings(), rank, 2, allgather(rank),
                                              **args_of_rank[rank])
        except Exception as e:  # noqa: BLE001 - the test inspects whatever it is
            results[rank] = e

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
        if t.is_alive():
            harness.fail("make_planner left a rank waiting")
    return results


with tempfile.TemporaryDirectory(prefix="dbs-py-tls-") as tmp:
    os.chmod(tmp, 0o755)  # munged wants a socket folder only root writes
    make_tls(os.path.join(tmp, "tls"))
    make_tls(os.path.join(tmp, "other"))
    ca, other_ca = os.path.join(tmp, "tls", "ca.pem"), os.path.join(tmp, "other", "ca.pem")
    cert, key = os.path.join(tmp, "tls", "server.pem"), os.path.join(tmp, "tls", "server.key")

    # 1. The right CA: the daemon plans every epoch, the ranks proving who they are with munge
    # where a private munged can run, else with the job's key.
    why_not = munge_why_not()
    munged = None if why_not else start_munged(os.path.join(tmp, "munge"))
    try:
        auth = ["--auth", "munge", "--munge-socket", munged.socket] if munged else []
        daemon = TlsDaemon(tmp, cert, key, *(["--auth", "token,munge", "--munge-socket",
                                              munged.socket] if munged else []))
        try:
            job = "py-tls"
            credential = auth if munged else ["--token-file", daemon.job_key(job)]
            out, err = train(job, 2, "--scheduler", daemon.listen, "--job", job,
                             "--tls-ca", ca, *credential)
            harness.check(f"connected to the daemon at {daemon.listen}" in err,
                          "the ranks connected to the daemon over TLS")
            harness.check(sources(out) == {2: "daemon", 3: "daemon"},
                          f"every next plan came from the daemon: {sources(out)}"
                          + ("" if "embedded policy" not in err else f"\n{err[-3000:]}"))
            log = open(daemon.log).read()
            harness.check("over TLS" in log, "the daemon speaks TLS")
            if munged:
                harness.check(re.search(rf"job '{job}' created: .*created with uid {os.geteuid()}",
                                        log) is not None,
                              f"the job was created by uid {os.geteuid()}'s munge credential")
            else:
                print(f"skip (munge): {why_not}; the ranks registered with the job's key")

            # 2. Another CA: one line per rank naming the untrusted certificate, the embedded
            # policy plans, the job finishes.
            job = "py-wrong-ca"
            credential = auth if munged else ["--token-file", daemon.job_key(job)]
            out, err = train(job, 1, "--scheduler", daemon.listen, "--job", job,
                             "--tls-ca", other_ca, *credential)
            why = (f"epoch 2 uses the embedded policy: daemon at {daemon.listen} unreachable (TLS "
                   f"handshake with {daemon.listen} failed: certificate not trusted: unable to "
                   "get local issuer certificate)")
            warnings = re.findall(r" dbs (?:\[[^]]*\] )?warning: .*", err)
            harness.check(err.count(why) == 2 and len(warnings) == 2,
                          f"each rank says once: {why!r}"
                          + ("" if len(warnings) == 2 else f"\n{warnings}\n{err[-3000:]}"))
            harness.check(sources(out) == {2: "embedded-fallback"},
                          f"the embedded policy planned: {sources(out)}")
            harness.check(f"job '{job}'" not in open(daemon.log).read(),
                          "the daemon never saw the job")
        finally:
            daemon.stop()
    finally:
        if munged:
            munged.stop()

    # 3. Bad values on rank 1 only: one ConfigError on every rank, naming the argument.
    not_pem = os.path.join(tmp, "tls", "server.ext")
    remote = {"address": "127.0.0.1:9", "job": "bad", "token_file": "",
              "connect_timeout_s": 0.2}
    for what, bad, message in [
            ("a missing tls_ca", {"tls_ca": "/nonexistent/ca.pem"},
             "tls_ca /nonexistent/ca.pem: cannot read the file"),
            ("a tls_ca that is not PEM", {"tls_ca": not_pem},
             f"tls_ca {not_pem}: no PEM CA certificate ("),
            ("an unknown auth", {"auth": "kerberos"},
             "auth 'kerberos': must be auto, token or munge"),
            ("auth token without a job key", {"auth": "token"},
             "auth 'token' needs token_file"),
    ] + ([] if _dbs.munge_built() else [
            ("auth munge without munge", {"auth": "munge"},
             "auth 'munge': this dbs is built without munge")]):
        start = time.monotonic()
        results = make_planners([remote, {**remote, **bad}])
        kinds = [type(r).__name__ for r in results]
        harness.check(kinds == ["ConfigError", "ConfigError"]
                      and message in str(results[1])
                      and str(results[0]).startswith("rank 1: ") and message in str(results[0]),
                      f"{what}: a ConfigError on both ranks naming it ({message!r}) in "
                      f"{time.monotonic() - start:.1f} s" + f"\n{results}")
    # tls_ca and munge_socket are read only with an address.
    results = make_planners([{"tls_ca": "/nonexistent/ca.pem"}] * 2)
    harness.check(all(isinstance(r, _dbs.Planner) for r in results),
                  "without an address tls_ca is not read (the embedded policy)")
