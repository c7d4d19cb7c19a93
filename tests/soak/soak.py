#!/usr/bin/env python3
"""Soak of dbs-scheduler serve (issue 10), loopback only, bounded in time.

While a real 2-rank dbs-agent job trains for --epochs epochs through the daemon, this process
holds against the same daemon, all at once:
  * --load-jobs jobs of --load-world ranks each, every rank reporting an epoch every ~second
    and timing report -> plan;
  * --idle connections that connect and never send (dropped at --hello-timeout; they come back);
  * --deaf clients that register and then send heartbeats without ever reading an answer;
  * --garbage clients that send random bytes, broken JSON, wrong versions and over-long lines,
    and reconnect;
  * one job of --big-world ranks (rank 0 registered and reporting);
  * GET /status every 100 ms and GET /metrics every second.
It samples the daemon's resident memory every 100 ms. It passes when the good job finishes
with every plan from the daemon (no epoch on the embedded policy), the daemon is alive and
answered every /status, and its peak RSS stays under --rss-bound-mib. Ten seconds into the
good job it also takes a `dbs-scheduler backup` of the busy state directory, which must succeed
and restore (`dbs-scheduler restore`) into a fresh directory. Prints one JSON summary.
"""
import argparse
import asyncio
import hashlib
import hmac
import json
import multiprocessing
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time

V = 2


def line(obj):
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


def settings(world, batch_per_rank=32, samples_per_rank=640):
    return {"policy": "dbs", "global_batch": batch_per_rank * world,
            "samples_per_epoch": samples_per_rank * world, "min_batch": 1, "max_batch": 0,
            "min_gain": 0.02, "rebalance_every": 0}


def percentile(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))]


class Soak:
    def __init__(self, args, token, port, http):
        self.a, self.token, self.port, self.http = args, token, port, http
        self.stop = asyncio.Event()
        self.latencies = []          # seconds, report -> plan, load agents
        self.counts = {"load_plans": 0, "load_errors": 0, "idle_dropped": 0, "deaf_closed": 0,
                       "garbage_answers": 0, "garbage_connections": 0, "big_plans": 0,
                       "connect_failed": 0}
        self.open_now = 0
        self.open_peak = 0

    def key(self, job):
        return hmac.new(self.token.encode(), job.encode(), hashlib.sha256).hexdigest()

    async def connect(self):
        r, w = await asyncio.open_connection("127.0.0.1", self.port)
        self.open_now += 1
        self.open_peak = max(self.open_peak, self.open_now)
        return r, w

    async def reconnect(self):
        """connect(), retried every second while it fails; None once the soak is stopping."""
        while not self.stop.is_set():
            try:
                return await self.connect()
            except OSError:
                self.counts["connect_failed"] += 1
                await asyncio.sleep(1)
        return None

    def closed(self, w):
        self.open_now -= 1
        w.close()

    async def load_rank(self, job, rank, world):
        while conn := await self.reconnect():
            r, w = conn
            try:
                w.write(line({"v": V, "type": "register", "job": job, "token": self.key(job),
                              "rank": rank, "world": world, "host": "soak",
                              "config": settings(world)}))
                msg = json.loads(await r.readline())
                if msg.get("type") != "plan":
                    self.counts["load_errors"] += 1
                    return
                epoch, batch = msg["epoch"], msg["batch"]
                speed = 1000.0 * (1 + rank % 4)
                while not self.stop.is_set():
                    # the ranks of a job sleep alike, so latency is not a wait for a late peer
                    await asyncio.sleep(0.8 + 0.4 * random.Random("%s/%d" % (job, epoch)).random())
                    steps = 20
                    w.write(line({"v": V, "type": "report", "job": job, "rank": rank,
                                  "epoch": epoch, "batch": batch, "samples": steps * batch,
                                  "steps": steps, "compute_s": steps * batch / speed,
                                  "comm_s": 0.01, "step_rate_median": speed}))
                    sent = time.monotonic()
                    while True:
                        raw = await r.readline()
                        if not raw:
                            raise ConnectionError("closed")
                        msg = json.loads(raw)
                        if msg.get("type") == "plan" and msg["epoch"] == epoch + 1:
                            break
                        if msg.get("type") == "error":
                            raise ConnectionError(msg.get("message"))
                    self.latencies.append(time.monotonic() - sent)
                    self.counts["load_plans"] += 1
                    epoch, batch = msg["epoch"], msg["batch"]
            except (OSError, ConnectionError, ValueError):
                self.counts["load_errors"] += 1
            finally:
                self.closed(w)

    async def idle(self):
        while conn := await self.reconnect():
            r, w = conn
            try:
                await asyncio.wait_for(r.read(), timeout=self.a.duration + 60)
                self.counts["idle_dropped"] += 1
            except (OSError, asyncio.TimeoutError):
                pass
            finally:
                self.closed(w)

    async def deaf(self, n):
        job = "deaf-%d" % n
        while conn := await self.reconnect():
            r, w = conn
            try:
                w.write(line({"v": V, "type": "register", "job": job, "token": self.key(job),
                              "rank": 0, "world": 1, "host": "soak", "config": settings(1)}))
                beat = line({"v": V, "type": "heartbeat"}) * 256
                while not self.stop.is_set():
                    w.write(beat)  # never read: the daemon's answers pile up on its side
                    await asyncio.wait_for(w.drain(), timeout=5)
                    await asyncio.sleep(0.1)
            except (OSError, asyncio.TimeoutError, ConnectionError):
                self.counts["deaf_closed"] += 1
            finally:
                self.closed(w)
                await asyncio.sleep(0.5)

    async def garbage(self, n):
        rng = random.Random(n)
        kinds = [lambda: bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 300))) + b"\n",
                 lambda: b'{"v":2,"type":"register","job":' + b"[" * 5000 + b"\n",
                 lambda: line({"v": 99, "type": "register"}),
                 lambda: line({"v": V, "type": "report", "job": "x", "rank": -1}),
                 lambda: b"x" * (70 * 1024),
                 lambda: line({"v": V, "type": "register", "job": "load-0", "token": "wrong",
                               "rank": 0, "world": 4, "host": "evil"})]
        while conn := await self.reconnect():
            r, w = conn
            self.counts["garbage_connections"] += 1
            try:
                w.write(rng.choice(kinds)())
                await asyncio.wait_for(w.drain(), timeout=5)
                got = await asyncio.wait_for(r.read(4096), timeout=15)
                if got:
                    self.counts["garbage_answers"] += 1
            except (OSError, asyncio.TimeoutError, ConnectionError):
                pass
            finally:
                self.closed(w)
            await asyncio.sleep(rng.random())

    async def big_job(self):
        job, world = "big", self.a.big_world
        r, w = await self.connect()
        try:
            w.write(line({"v": V, "type": "register", "job": job, "token": self.key(job),
                          "rank": 0, "world": world, "host": "soak",
                          "config": settings(world, 1, 4)}))
            msg = json.loads(await r.readline())
            epoch, batch = msg["epoch"], msg["batch"]
            while not self.stop.is_set():
                await asyncio.sleep(1)
                w.write(line({"v": V, "type": "report", "job": job, "rank": 0, "epoch": epoch,
                              "batch": batch, "samples": 4, "steps": 4, "compute_s": 0.01,
                              "comm_s": 0.001, "step_rate_median": 400}))
                while True:  # the plan comes at --report-timeout: the other ranks never report
                    msg = json.loads(await r.readline())
                    if msg.get("type") == "plan":
                        break
                self.counts["big_plans"] += 1
                epoch, batch = msg["epoch"], msg["batch"]
        except (OSError, ValueError, KeyError):
            pass
        finally:
            self.closed(w)


def poll_status(http, stop, out):
    """GET /status every 100 ms and /metrics every second, in a process of its own so that the
    crowd's event loop does not delay it; appends (ok, ms) pairs to the list `out`."""
    import urllib.request
    tick = 0
    while not stop.is_set():
        t0 = time.monotonic()
        try:
            with urllib.request.urlopen("http://%s/status" % http, timeout=10) as r:
                json.loads(r.read())
            out.append((1, 1e3 * (time.monotonic() - t0)))
            if tick % 10 == 0:
                with urllib.request.urlopen("http://%s/metrics" % http, timeout=10) as r:
                    r.read()
        except Exception:  # noqa: BLE001 - any failure of the page counts as one
            out.append((0, 1e3 * (time.monotonic() - t0)))
        tick += 1
        time.sleep(max(0.0, 0.1 - (time.monotonic() - t0)))


def cpu_seconds(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def sample_rss(pid):
    try:
        for l in open("/proc/%d/status" % pid):
            if l.startswith("VmRSS:"):
                return int(l.split()[1]) / 1024.0
    except OSError:
        return None
    return None


async def backup_under_load(sched, tmp, result):
    """dbs-scheduler backup of the daemon's state while it is busy, then restore of it."""
    await asyncio.sleep(10)
    t0 = time.monotonic()
    p = await asyncio.create_subprocess_exec(
        sched, "backup", "--state-dir", tmp + "/state", "--out", tmp + "/backup.tar",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await p.communicate()
    result.update(exit=p.returncode, seconds=round(time.monotonic() - t0, 2),
                  output=out.decode(errors="replace").strip())
    p = await asyncio.create_subprocess_exec(
        sched, "restore", "--from", tmp + "/backup.tar", "--state-dir", tmp + "/restored",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await p.communicate()
    result.update(restore_exit=p.returncode, restore_output=out.decode(errors="replace").strip())


async def main_async(a, daemon, token, port, http, agent_cmd, env, tmp, sched, backup):
    s = Soak(a, token, port, http)
    tasks = [asyncio.create_task(s.big_job())]
    for j in range(a.load_jobs):
        for r in range(a.load_world):
            tasks.append(asyncio.create_task(s.load_rank("load-%d" % j, r, a.load_world)))
    tasks += [asyncio.create_task(s.idle()) for _ in range(a.idle)]
    tasks += [asyncio.create_task(s.deaf(n)) for n in range(a.deaf)]
    tasks += [asyncio.create_task(s.garbage(n)) for n in range(a.garbage)]
    await asyncio.sleep(3)  # let the crowd connect before the good job starts
    out = open(os.path.join(tmp, "agents.out"), "wb")
    job = await asyncio.create_subprocess_exec(*agent_cmd, env=env, stdout=out, stderr=out)
    tasks.append(asyncio.create_task(backup_under_load(sched, tmp, backup)))
    rss, t0 = [], time.monotonic()
    while job.returncode is None and time.monotonic() - t0 < a.duration:
        v = sample_rss(daemon.pid)
        if v is not None:
            rss.append(v)
        try:
            await asyncio.wait_for(job.wait(), timeout=0.1)
        except asyncio.TimeoutError:
            pass
    job_timed_out = job.returncode is None
    if job_timed_out:
        job.kill()
        await job.wait()
    s.stop.set()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return s, rss, job.returncode, job_timed_out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=os.environ.get("DBS_BUILD", "build"))
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--duration", type=float, default=240, help="give the good job this long")
    p.add_argument("--load-jobs", type=int, default=500)
    p.add_argument("--load-world", type=int, default=4)
    p.add_argument("--idle", type=int, default=2600)
    p.add_argument("--deaf", type=int, default=200)
    p.add_argument("--garbage", type=int, default=200)
    p.add_argument("--big-world", type=int, default=65536)
    p.add_argument("--report-timeout", type=float, default=5)
    p.add_argument("--rss-bound-mib", type=float, default=512)
    a = p.parse_args()
    build = os.path.abspath(a.build)
    sched, agent = build + "/scheduler/dbs-scheduler", build + "/agents/dbs-agent"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    connections = a.load_jobs * a.load_world + a.idle + a.deaf + a.garbage + 1 + 2
    if hard < connections + 200:
        sys.exit("soak: %d connections need more than the open-file limit %d" % (connections, hard))
    tmp = tempfile.mkdtemp(prefix="dbs-soak.")
    token_file = tmp + "/token"
    with open(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(os.urandom(32).hex())
    token = open(token_file).read().strip()
    log = open(tmp + "/daemon.log", "wb")
    daemon = subprocess.Popen(
        [sched, "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--http-trust-loopback", "--token-file",
         token_file, "--state-dir", tmp + "/state", "--ready-file", tmp + "/ready.json",
         "--report-timeout", str(a.report_timeout), "--max-connections", str(connections + 100),
         "--log-level", "warning"], stdout=log, stderr=log)
    try:
        for _ in range(400):
            if os.path.exists(tmp + "/ready.json") and os.path.getsize(tmp + "/ready.json"):
                break
            if daemon.poll() is not None:
                sys.exit("soak: the daemon exited at start: " + open(tmp + "/daemon.log").read())
            time.sleep(0.05)
        ready = json.load(open(tmp + "/ready.json"))
        port = int(ready["listen"].rsplit(":", 1)[1])
        key = subprocess.check_output([sched, "job-key", "--token-file", token_file, "good"])
        assert key.decode().strip() == hmac.new(token.encode(), b"good", hashlib.sha256).hexdigest()
        with open(os.open(tmp + "/good.key", os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
            f.write(key)
        env = dict(os.environ, DBS_SCHEDULER=ready["listen"], DBS_TOKEN_FILE=tmp + "/good.key")
        agent_cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                     "-x", "DBS_SCHEDULER", "-x", "DBS_TOKEN_FILE", "-np", "2", agent,
                     "--model", "lenet", "--epochs", str(a.epochs), "--train-limit", "2000",
                     "--test-limit", "200", "--threads", "1", "--no-progress", "--job", "good",
                     "--scheduler-timeout", "30", "--trace", tmp + "/good.jsonl"]
        started, cpu0 = time.monotonic(), cpu_seconds(daemon.pid)
        manager = multiprocessing.Manager()
        stop, polls = manager.Event(), manager.list()
        poller = multiprocessing.Process(target=poll_status, args=(ready["http"], stop, polls))
        poller.start()
        backup = {}
        s, rss, rc, timed_out = asyncio.run(
            main_async(a, daemon, token, port, ready["http"], agent_cmd, env, tmp, sched, backup))
        stop.set()
        poller.join()
        polls = list(polls)
        status_ms = [ms for ok, ms in polls if ok]
        status_failed = sum(1 for ok, _ in polls if not ok)
        wall = time.monotonic() - started
        daemon_cpu = cpu_seconds(daemon.pid) - cpu0
        alive = daemon.poll() is None
        plans = [r for r in map(json.loads, open(tmp + "/good.jsonl")) if r["type"] == "plan"] \
            if os.path.exists(tmp + "/good.jsonl") else []
        sources = [p["source"] for p in plans]
        agents_out = open(tmp + "/agents.out").read()
        good_ok = (rc == 0 and not timed_out and len(plans) >= a.epochs and
                   sources[0] == "initial" and set(sources[1:]) == {"daemon"} and
                   "embedded policy" not in agents_out)
        summary = {
            "wall_s": round(wall, 1), "connections_planned": connections,
            "client_connections_peak": s.open_peak,
            "good_job": {"exit": rc, "timed_out": timed_out, "plans": len(plans),
                         "plan_sources": sorted(set(sources)), "ok": good_ok},
            "daemon_alive": alive,
            "daemon_cpu_s": round(daemon_cpu, 1),
            "load_average_1min": os.getloadavg()[0],
            "daemon_rss_mib_peak": round(max(rss), 1) if rss else None,
            "daemon_rss_mib_bound": a.rss_bound_mib,
            "report_to_plan_s": {"count": len(s.latencies),
                                 "p50": percentile(s.latencies, 50),
                                 "p99": percentile(s.latencies, 99),
                                 "max": max(s.latencies) if s.latencies else None},
            "status": {"ok": len(status_ms), "failed": status_failed,
                       "ms_p50": percentile(status_ms, 50), "ms_p99": percentile(status_ms, 99)},
            "counts": s.counts,
            "backup": backup,
        }
        ok = (good_ok and alive and summary["daemon_rss_mib_peak"] is not None and
              summary["daemon_rss_mib_peak"] < a.rss_bound_mib and status_failed == 0
              and status_ms and s.counts["load_plans"] > 0
              and backup.get("exit") == 0 and backup.get("restore_exit") == 0)
        summary["ok"] = ok
        print(json.dumps(summary, indent=2))
        if not good_ok:
            sys.stderr.write(agents_out[-3000:])
        if not ok:
            sys.stderr.write("soak: FAILED; daemon log tail:\n" +
                             open(tmp + "/daemon.log").read()[-3000:])
        return 0 if ok else 1
    finally:
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(timeout=20)
            except subprocess.TimeoutExpired:
                daemon.kill()
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    sys.exit(main())
