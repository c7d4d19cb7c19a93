#!/usr/bin/env python3
"""Resident memory of dbs-scheduler serve per agent connection, over plain TCP and over TLS.

For each transport and each kind of connection, a daemon of its own (loopback, --hello-timeout
long enough that nothing is dropped meanwhile) takes N connections of that kind, all at once:
  never       a TCP connection that never sends (the soak's idle crowd: no TLS handshake);
  handshake   the TLS handshake done, then nothing (over plain TCP: the same as never);
  registered  registered (jobs of 4 ranks), then silent;
  reporting   registered, and reporting an epoch about every second.
It prints, as JSON lines, the daemon's VmRSS before, with the N connections held (after
--hold seconds), and after they closed, the difference per connection in KiB, and the CPU seconds of the daemon and of
this client while the connections were opened and held; with
--malloc-stats also the bytes glibc's malloc has in use at those points (malloc_stats() called in
the daemon through gdb), which tells live memory from freed memory not given back.

  python3 tests/soak/conn_memory.py --build build -n 1000
"""
import argparse
import asyncio
import hashlib
import hmac
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time

import tls as tls_files

KINDS = ("never", "handshake", "registered", "reporting")
WORLD = 4


def rss_kib(pid):
    for l in open("/proc/%d/status" % pid):
        if l.startswith("VmRSS:"):
            return int(l.split()[1])
    return None


def cpu_seconds(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def malloc_in_use(pid, log):
    """Bytes in use by malloc in process pid (malloc_stats() through gdb; it prints to the
    daemon's stderr, `log`), or None without gdb."""
    try:
        subprocess.run(["gdb", "-batch", "-p", str(pid), "-ex", "call (void) malloc_stats()"],
                       capture_output=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    totals = [l for l in open(log) if l.startswith("in use bytes")]
    return int(totals[-1].split("=")[1]) if totals else None


def line(obj):
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


def settings(world):
    return {"policy": "dbs", "global_batch": 32 * world, "samples_per_epoch": 640 * world,
            "min_batch": 1, "max_batch": 0, "min_gain": 0.02, "rebalance_every": 0}


async def hold(port, ctx, kind, n, token, hold_s):
    """Opens n connections of `kind`, keeps them hold_s, returns (connected, plans)."""
    plans, stop = [0], asyncio.Event()

    async def one(i):
        if kind == "never":
            r, w = await asyncio.open_connection("127.0.0.1", port)
        else:
            r, w = await asyncio.open_connection("127.0.0.1", port, ssl=ctx,
                                                 server_hostname="127.0.0.1" if ctx else None)
        if kind in ("registered", "reporting"):
            job, rank = "m-%d" % (i // WORLD), i % WORLD
            key = hmac.new(token.encode(), job.encode(), hashlib.sha256).hexdigest()
            w.write(line({"v": 2, "type": "register", "job": job, "rank": rank, "world": WORLD,
                          "host": "m", "token": key, "config": settings(WORLD)}))
            msg = json.loads(await r.readline())
            epoch, batch = msg["epoch"], msg["batch"]
            while kind == "reporting" and not stop.is_set():
                await asyncio.sleep(1)
                w.write(line({"v": 2, "type": "report", "job": job, "rank": rank,
                              "epoch": epoch, "batch": batch, "samples": 20 * batch,
                              "steps": 20, "compute_s": 0.02 * batch, "comm_s": 0.01,
                              "step_rate_median": 1000.0}))
                while True:
                    msg = json.loads(await r.readline())
                    if msg.get("type") == "plan" and msg["epoch"] == epoch + 1:
                        break
                plans[0] += 1
                epoch, batch = msg["epoch"], msg["batch"]
        await stop.wait()
        w.close()

    tasks = [asyncio.create_task(one(i)) for i in range(n)]
    await asyncio.sleep(hold_s)
    done = sum(1 for t in tasks if t.done())  # a task done before stop failed
    failed = [t.exception() for t in tasks if t.done() and t.exception()]
    return tasks, stop, n - done, plans, failed[:3]


def measure(a, transport, kind):
    tmp = tempfile.mkdtemp(prefix="dbs-connmem.")
    daemon = None
    try:
        token_file = tmp + "/token"
        with open(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(os.urandom(32).hex())
        token = open(token_file).read().strip()
        extra, ctx = [], None
        if transport == "tls":
            ca, cert, key = tls_files.make_certs(tmp + "/tls")
            extra = ["--tls-cert", cert, "--tls-key", key]
            ctx = ssl.create_default_context(cafile=ca)
        daemon = subprocess.Popen(
            [a.build + "/scheduler/dbs-scheduler", "serve", "--listen", "127.0.0.1:0",
             "--token-file", token_file, "--ready-file", tmp + "/ready.json",
             "--hello-timeout", str(a.hold + 60), "--max-connections", str(a.n + 100),
             "--log-level", "error", *extra], stderr=open(tmp + "/daemon.err", "w"))
        for _ in range(400):
            if os.path.exists(tmp + "/ready.json") and os.path.getsize(tmp + "/ready.json"):
                break
            time.sleep(0.05)
        port = int(json.load(open(tmp + "/ready.json"))["listen"].rsplit(":", 1)[1])
        time.sleep(0.5)
        before = rss_kib(daemon.pid)
        stats = (lambda: malloc_in_use(daemon.pid, tmp + "/daemon.err")) if a.malloc_stats \
            else (lambda: None)
        used_before = stats()

        async def run():
            tasks, stop, open_n, plans, failed = await hold(port, ctx, kind, a.n, token, a.hold)
            held = rss_kib(daemon.pid)
            used_held = stats()
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            return held, used_held, open_n, plans[0], failed

        cpu0, client0 = cpu_seconds(daemon.pid), time.process_time()
        held, used_held, open_n, plans, failed = asyncio.run(run())
        cpu1, client1 = cpu_seconds(daemon.pid), time.process_time()
        time.sleep(1)
        after = rss_kib(daemon.pid)
        record = {"transport": transport, "kind": kind, "n": a.n, "open": open_n,
                "plans": plans, "rss_kib_before": before, "rss_kib_held": held,
                "rss_kib_after_close": after,
                "kib_per_connection": round((held - before) / a.n, 1),
                "daemon_cpu_s": round(cpu1 - cpu0, 2), "client_cpu_s": round(client1 - client0, 2),
                "errors": [repr(e) for e in failed]}
        used_after = stats()
        if None not in (used_before, used_held, used_after):  # with --malloc-stats, gdb answered
            record.update(malloc_kib_before=used_before // 1024, malloc_kib_held=used_held // 1024,
                          malloc_kib_after_close=used_after // 1024,
                          malloc_kib_per_connection=round((used_held - used_before) / 1024 / a.n, 1))
        return record
    finally:
        if daemon is not None:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=20)
        subprocess.run(["rm", "-rf", tmp])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=os.environ.get("DBS_BUILD", "build"))
    p.add_argument("-n", type=int, default=1000, help="connections of each kind")
    p.add_argument("--hold", type=float, default=8, help="seconds to hold them before measuring")
    p.add_argument("--transports", default="plain,tls")
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--malloc-stats", action="store_true", help="also malloc's bytes in use (gdb)")
    a = p.parse_args()
    a.build = os.path.abspath(a.build)
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    for transport in a.transports.split(","):
        for kind in a.kinds.split(","):
            if transport == "plain" and kind == "handshake":
                continue
            print(json.dumps(measure(a, transport, kind)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
