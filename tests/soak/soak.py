#!/usr/bin/env python3
"""Soak of dbs-scheduler serve, loopback only, bounded in time.

While a real 2-rank dbs-agent job trains for --epochs epochs through the daemon, this process
holds against the same daemon, all at once, the crowd of tests/soak/crowd.py: --load-jobs jobs
of --load-world ranks reporting every ~second, --idle connections that never send, --deaf
clients that never read, --garbage clients, one job of --big-world ranks, and the hostile
clients of the variant; GET /status every 100 ms and GET /metrics every second (with the daemon
token, so that the whole page is rendered). It samples the daemon's resident memory every
100 ms. Ten seconds into the good job it takes a `dbs-scheduler backup` of the busy state
directory, which must succeed and restore into a fresh directory (within a minute; the crowd
keeps the daemon busy until then if the job ends first).

The variants (--variants, default all three, one after the other, each with a daemon of its
own):
  plain  plain TCP, the daemon token and job keys (serve --auth token);
  munge  plain TCP, serve --auth token,munge with a private munged: the good job registers with
         munge credentials (of root), every other load job with credentials of uid 1001, and
         --hostile-munge clients present uid 1002's, replayed, expired, garbage and misbound
         credentials, each of which must be refused with code auth;
  tls    both ports TLS (a throwaway CA, serve --tls-cert/--tls-key), /status and /metrics over
         https, the good job with --tls-ca, the crowd over TLS (munge as in the munge variant
         when munge is available: the daemon takes tokens and credentials over TLS at once),
         and --hostile-tls clients: plain text to the TLS port, half a handshake, a handshake
         then silence, random bytes, each of which must be closed.
A variant passes when the good job finishes with every plan from the daemon (no epoch on the
embedded policy), the daemon is alive and answered every /status, its peak RSS stays under
--rss-bound-mib, the load got plans, the backup restored and every hostile client was refused
or closed as it must be. A variant that cannot run here (munged missing, not root, munge not
built, openssl missing) is skipped with the reason printed. Prints one JSON summary; --save also
appends one record per variant that ran (study scheduler-soak, with the commit, the machine and
the load average) to docs/results/scheduler-load.jsonl and regenerates the results tables.
"""
import argparse
import asyncio
import json
import multiprocessing
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time

import munge
import tls as tls_files
from crowd import Crowd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import records  # noqa: E402  (bench/records.py: the facts every record carries)

VARIANTS = ("plain", "munge", "tls")


def percentile(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))]


def get(url, token, ca, timeout=10):
    """GET url with the daemon token as bearer, over https verified against ca when given."""
    import ssl
    import urllib.request
    req = urllib.request.Request(url, headers={"Authorization": "Bearer " + token})
    ctx = ssl.create_default_context(cafile=ca) if ca else None
    with urllib.request.urlopen(req, timeout=timeout, context=ctx) as r:
        return r.read()


def poll_status(base, token, ca, stop, out):
    """GET /status every 100 ms and /metrics every second, in a process of its own so that the
    crowd's event loop does not delay it; appends (ok, ms) pairs to the list `out`."""
    tick = 0
    while not stop.is_set():
        t0 = time.monotonic()
        try:
            json.loads(get(base + "/status", token, ca))
            out.append((1, 1e3 * (time.monotonic() - t0)))
            if tick % 10 == 0:
                get(base + "/metrics", token, ca)
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


def run_with_cpu(cmd):
    """Runs cmd to its end: (exit code, its own CPU seconds from wait4, its output)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.read()
    p.stdout.close()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, usage.ru_utime + usage.ru_stime, out


async def backup_under_load(sched, tmp, result):
    """dbs-scheduler backup of the daemon's state while it is busy, then restore of it."""
    await asyncio.sleep(10)
    t0 = time.monotonic()
    exit_code, cpu_s, out = await asyncio.to_thread(
        run_with_cpu, [sched, "backup", "--state-dir", tmp + "/state", "--out", tmp + "/backup.tar"])
    result.update(exit=exit_code, seconds=round(time.monotonic() - t0, 2), cpu_s=round(cpu_s, 2),
                  output=out.decode(errors="replace").strip())
    t0 = time.monotonic()
    p = await asyncio.create_subprocess_exec(
        sched, "restore", "--from", tmp + "/backup.tar", "--state-dir", tmp + "/restored",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await p.communicate()
    result.update(restore_exit=p.returncode, restore_seconds=round(time.monotonic() - t0, 2),
                  restore_output=out.decode(errors="replace").strip())


async def crowd_async(a, daemon, crowd, agent_cmd, env, tmp, sched, backup):
    c = crowd
    tasks = [asyncio.create_task(c.big_job())]
    for j in range(a.load_jobs):
        for r in range(a.load_world):
            tasks.append(asyncio.create_task(c.load_rank(j, r, a.load_world)))
    tasks += [asyncio.create_task(c.idle()) for _ in range(a.idle)]
    tasks += [asyncio.create_task(c.deaf(n)) for n in range(a.deaf)]
    tasks += [asyncio.create_task(c.garbage(n)) for n in range(a.garbage)]
    if c.creds is not None:
        tasks += [asyncio.create_task(c.hostile_munge(n)) for n in range(a.hostile_munge)]
    if c.tls is not None:
        tasks += [asyncio.create_task(c.hostile_tls(n)) for n in range(a.hostile_tls)]
    await asyncio.sleep(3)  # let the crowd connect before the good job starts
    out = open(os.path.join(tmp, "agents.out"), "wb")
    job = await asyncio.create_subprocess_exec(*agent_cmd, env=env, stdout=out, stderr=out)
    backup_task = asyncio.create_task(backup_under_load(sched, tmp, backup))
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
    # The backup was taken under load; it and its restore may still run when a short job ends:
    # the crowd keeps the daemon busy until they end (or a minute passes: then it fails).
    t1 = time.monotonic()
    while not backup_task.done() and time.monotonic() - t1 < 60:
        v = sample_rss(daemon.pid)
        if v is not None:
            rss.append(v)
        await asyncio.wait([backup_task], timeout=0.1)
    backup_task.cancel()
    tasks.append(backup_task)
    c.stop.set()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return rss, job.returncode, job_timed_out


def start_daemon(sched, tmp, a, connections, extra):
    token_file = tmp + "/token"
    with open(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(os.urandom(32).hex())
    log = open(tmp + "/daemon.log", "wb")
    daemon = subprocess.Popen(
        [sched, "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--token-file",
         token_file, "--state-dir", tmp + "/state", "--ready-file", tmp + "/ready.json",
         "--report-timeout", str(a.report_timeout), "--max-connections", str(connections + 100),
         "--log-level", "warning", *extra], stdout=log, stderr=log)
    for _ in range(400):
        if os.path.exists(tmp + "/ready.json") and os.path.getsize(tmp + "/ready.json"):
            break
        if daemon.poll() is not None:
            sys.exit("soak: the daemon exited at start: " + open(tmp + "/daemon.log").read())
        time.sleep(0.05)
    return daemon, token_file, open(token_file).read().strip(), json.load(open(tmp + "/ready.json"))


def run_variant(a, build, variant, use_munge):
    """One soak against a daemon of its own; returns its summary (with "ok")."""
    sched, agent = build + "/scheduler/dbs-scheduler", build + "/agents/dbs-agent"
    use_tls = variant == "tls"
    connections = (a.load_jobs * a.load_world + a.idle + a.deaf + a.garbage + 1 + 2 +
                   (a.hostile_munge if use_munge else 0) + (a.hostile_tls if use_tls else 0))
    tmp = tempfile.mkdtemp(prefix="dbs-soak.")
    munged = creds = daemon = None
    try:
        extra, ca = [], None
        if use_munge:
            munged = munge.start_munged(tmp)
            creds = munge.Credentials(munged.socket, [munge.OWNER, munge.OTHER])
            extra += ["--auth", "token,munge", "--munge-socket", munged.socket]
        if use_tls:
            ca, cert, key = tls_files.make_certs(tmp + "/tls")
            extra += ["--tls-cert", cert, "--tls-key", key]
        daemon, token_file, token, ready = start_daemon(sched, tmp, a, connections, extra)
        port = int(ready["listen"].rsplit(":", 1)[1])
        base = ("https://" if use_tls else "http://") + ready["http"]
        env = dict(os.environ, DBS_SCHEDULER=ready["listen"])
        env.pop("DBS_TOKEN_FILE", None)
        good = ["--job", "good"]
        if variant == "munge":  # as root: the good job belongs to uid 0
            good += ["--auth", "munge", "--munge-socket", munged.socket]
        else:
            key_file = tmp + "/good.key"
            with open(os.open(key_file, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
                f.write(subprocess.check_output([sched, "job-key", "--token-file", token_file,
                                                 "good"]))
            env["DBS_TOKEN_FILE"] = key_file
        if use_tls:
            good += ["--tls-ca", ca]
        agent_cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                     "-x", "DBS_SCHEDULER", *(["-x", "DBS_TOKEN_FILE"] if "DBS_TOKEN_FILE" in env
                                              else []),
                     "-np", "2", agent, "--model", "lenet", "--epochs", str(a.epochs),
                     "--train-limit", "2000", "--test-limit", "200", "--threads", "1",
                     "--no-progress", "--scheduler-timeout", "30", "--trace",
                     tmp + "/good.jsonl", *good]
        started, cpu0 = time.monotonic(), cpu_seconds(daemon.pid)
        crowd0 = resource.getrusage(resource.RUSAGE_SELF)
        manager = multiprocessing.Manager()
        stop, polls = manager.Event(), manager.list()
        poller = multiprocessing.Process(target=poll_status, args=(base, token, ca, stop, polls))
        poller.start()
        backup = {}
        crowd = Crowd(a, token, port, tls_files.client_context(ca) if use_tls else None, creds)
        rss, rc, timed_out = asyncio.run(
            crowd_async(a, daemon, crowd, agent_cmd, env, tmp, sched, backup))
        stop.set()
        poller.join()
        polls = list(polls)
        status_ms = [ms for ok, ms in polls if ok]
        status_failed = sum(1 for ok, _ in polls if not ok)
        wall = time.monotonic() - started
        daemon_cpu = cpu_seconds(daemon.pid) - cpu0
        crowd1 = resource.getrusage(resource.RUSAGE_SELF)
        crowd_cpu = (crowd1.ru_utime + crowd1.ru_stime) - (crowd0.ru_utime + crowd0.ru_stime)
        alive = daemon.poll() is None
        rejected = None
        if alive:
            try:
                rejected = json.loads(get(base + "/status", token, ca))["daemon"]["rejected"]
            except Exception as e:  # noqa: BLE001 - reported, and the variant fails
                status_failed += 1
                rejected = "unreadable: %r" % e
        plans = [r for r in map(json.loads, open(tmp + "/good.jsonl")) if r["type"] == "plan"] \
            if os.path.exists(tmp + "/good.jsonl") else []
        sources = [p["source"] for p in plans]
        agents_out = open(tmp + "/agents.out").read()
        good_ok = (rc == 0 and not timed_out and len(plans) >= a.epochs and
                   sources[0] == "initial" and set(sources[1:]) == {"daemon"} and
                   "embedded policy" not in agents_out)
        s = crowd
        summary = {
            "auth": "token,munge" if use_munge else "token", "tls": use_tls,
            "wall_s": round(wall, 1), "connections_planned": connections,
            "client_connections_peak": s.open_peak,
            "good_job": {"exit": rc, "timed_out": timed_out, "plans": len(plans),
                         # the initial plan and the daemon's, not the embedded policy's
                         "plans_not_embedded": sum(not x.startswith("embedded") for x in sources),
                         "plan_sources": sorted(set(sources)), "ok": good_ok},
            "daemon_alive": alive,
            "daemon_cpu_s": round(daemon_cpu, 1),
            "crowd_cpu_s": round(crowd_cpu, 1),  # this process: the crowd's event loop
            "load_average_1min": os.getloadavg()[0],
            "daemon_rss_mib_peak": round(max(rss), 1) if rss else None,
            "daemon_rss_mib_bound": a.rss_bound_mib,
            "report_to_plan_s": {"count": len(s.latencies),
                                 "p50": percentile(s.latencies, 50),
                                 "p99": percentile(s.latencies, 99),
                                 "max": max(s.latencies) if s.latencies else None},
            "load_connect_s": {"p50": percentile(s.handshake_s, 50),
                               "p99": percentile(s.handshake_s, 99),
                               "max": max(s.handshake_s) if s.handshake_s else None},
            "load_register_s": {"p50": percentile(s.register_s, 50),
                                "p99": percentile(s.register_s, 99),
                                "max": max(s.register_s) if s.register_s else None},
            "status": {"ok": len(status_ms), "failed": status_failed,
                       "ms_p50": percentile(status_ms, 50), "ms_p99": percentile(status_ms, 99)},
            "counts": s.counts,
            "daemon_rejected": rejected,
            "backup": backup,
        }
        if use_munge:
            summary["hostile_munge_answers"] = s.refusals
        if use_tls:
            summary["hostile_tls_outcomes"] = s.tls_hostile
        summary["load_refused"] = s.load_refused
        summary["broken_rules"] = s.unexpected
        ok = (good_ok and alive and summary["daemon_rss_mib_peak"] is not None and
              summary["daemon_rss_mib_peak"] < a.rss_bound_mib and status_failed == 0
              and status_ms and s.counts["load_plans"] > 0 and s.rules_held()
              and backup.get("exit") == 0 and backup.get("restore_exit") == 0)
        summary["ok"] = bool(ok)
        if not good_ok:
            sys.stderr.write(agents_out[-3000:])
        if not ok:
            sys.stderr.write("soak %s: FAILED; daemon log tail:\n" % variant +
                             open(tmp + "/daemon.log").read()[-3000:])
        return summary
    finally:
        if daemon is not None and daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(timeout=20)
            except subprocess.TimeoutExpired:
                daemon.kill()
        if creds is not None:
            creds.stop()
        if munged is not None:
            munged.stop()
        subprocess.run(["rm", "-rf", tmp])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=os.environ.get("DBS_BUILD", "build"))
    p.add_argument("--variants", default=",".join(VARIANTS),
                   help="comma-separated, run in this order: plain, munge, tls")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--duration", type=float, default=240, help="give the good job this long")
    p.add_argument("--load-jobs", type=int, default=500)
    p.add_argument("--load-world", type=int, default=4)
    p.add_argument("--idle", type=int, default=2600)
    p.add_argument("--deaf", type=int, default=200)
    p.add_argument("--garbage", type=int, default=200)
    p.add_argument("--hostile-munge", type=int, default=20)
    p.add_argument("--hostile-tls", type=int, default=20)
    p.add_argument("--big-world", type=int, default=65536)
    p.add_argument("--report-timeout", type=float, default=5)
    p.add_argument("--rss-bound-mib", type=float, default=512)
    p.add_argument("--save", action="store_true",
                   help="append a record per variant to docs/results/scheduler-load.jsonl and "
                        "regenerate the results tables (bench/tables.py --write)")
    a = p.parse_args()
    variants = [v for v in a.variants.split(",") if v]
    if not variants or any(v not in VARIANTS for v in variants):
        p.error("--variants: a comma-separated list of " + ", ".join(VARIANTS))
    build = os.path.abspath(a.build)
    load_before = round(os.getloadavg()[0], 2)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    connections = (a.load_jobs * a.load_world + a.idle + a.deaf + a.garbage + 3 +
                   a.hostile_munge + a.hostile_tls)
    if hard < connections + 200:
        sys.exit("soak: %d connections need more than the open-file limit %d" % (connections, hard))
    no_munge = munge.unavailable(build + "/scheduler/dbs-scheduler")
    no_tls = tls_files.unavailable()
    results, skipped = {}, {}
    for v in variants:
        why = no_munge if v == "munge" else no_tls if v == "tls" else None
        if why:
            skipped[v] = why
            print("soak %s: skipped: %s" % (v, why), file=sys.stderr, flush=True)
            continue
        if v == "tls" and no_munge:
            print("soak tls: tokens only, without munge credentials: " + no_munge,
                  file=sys.stderr, flush=True)
        print("soak %s: running" % v, file=sys.stderr, flush=True)
        results[v] = run_variant(a, build, v, v == "munge" or (v == "tls" and not no_munge))
        print("soak %s: %s" % (v, "ok" if results[v]["ok"] else "FAILED"), file=sys.stderr,
              flush=True)
    ok = bool(results) and all(r["ok"] for r in results.values())
    print(json.dumps({"variants": results, "skipped": skipped, "ok": ok}, indent=2))
    if a.save and results:
        save(build, results, load_before)
    return 0 if ok else 1


def record_of(variant, r, facts):
    """A variant's summary as a record of the scheduler-soak study."""
    backup = r["backup"]
    out = {"study": "scheduler-soak", "variant": variant, "command": "tests/run.sh --soak",
           "clients": r["connections_planned"], "wall_s": r["wall_s"],
           "good_job_plans_from_daemon": r["good_job"]["plans_not_embedded"],
           "daemon_peak_rss_mib": r["daemon_rss_mib_peak"],
           "rss_bound_mib": r["daemon_rss_mib_bound"], "daemon_cpu_s": r["daemon_cpu_s"],
           "crowd_cpu_s": r["crowd_cpu_s"], "load_plans": r["counts"]["load_plans"],
           "load_errors": r["counts"]["load_errors"],
           "report_to_plan_p50_s": r["report_to_plan_s"]["p50"],
           "report_to_plan_p99_s": r["report_to_plan_s"]["p99"],
           "load_register_p50_s": r["load_register_s"]["p50"],
           "status_ok": r["status"]["ok"], "status_failed": r["status"]["failed"],
           "daemon_rejected": {k: v for k, v in r["daemon_rejected"].items() if v},
           "backup_s": backup.get("seconds"), "backup_cpu_s": backup.get("cpu_s"),
           "restore_s": backup.get("restore_seconds"),
           "backup_restored": backup.get("exit") == 0 and backup.get("restore_exit") == 0,
           "ok": r["ok"]}
    if "munge_load_plans" in r["counts"]:
        out["munge_load_plans"] = r["counts"]["munge_load_plans"]
    if "hostile_munge_answers" in r:
        out["hostile_munge"] = r["hostile_munge_answers"]
    if "hostile_tls_outcomes" in r:
        out["hostile_tls"] = r["hostile_tls_outcomes"]
    return {**out, **facts}


def save(build, results, load_before):
    peak = json.loads(subprocess.run([build + "/bench/dbs-bench", "peak", "--seconds", "1"],
                                     capture_output=True, text=True, check=True).stdout)
    facts = {"date": records.now_utc(), "commit": records.commit(),
             "machine": records.machine_facts(peak),
             "load": [load_before, round(os.getloadavg()[0], 2)]}
    path = os.path.join(records.SOURCE, "docs", "results", "scheduler-load.jsonl")
    records.append_jsonl(path, [record_of(v, r, facts) for v, r in results.items()])
    print("soak: saved %d record(s) to %s" % (len(results), path), file=sys.stderr)
    subprocess.run([sys.executable, os.path.join(records.SOURCE, "bench", "tables.py"), "--write"],
                   stdout=sys.stderr, check=False)


if __name__ == "__main__":
    sys.exit(main())
