"""The soak's clients (tests/soak/soak.py), all in one asyncio loop, over plain TCP or TLS:
  * load ranks: jobs of --load-world ranks, every rank reporting an epoch every ~second and
    timing report -> plan; with munge, every other job registers with munge credentials of
    uid 1001 instead of its job key;
  * idle connections that connect and never send (on a TLS port: never start the handshake);
  * deaf clients that register and then send heartbeats without ever reading an answer;
  * garbage clients: random bytes, broken JSON, wrong versions, over-long lines, a wrong token;
  * one job of --big-world ranks (rank 0 registered and reporting);
  * with munge, hostile registers to the munge jobs, each of which must be refused with code
    auth: uid 1002's credential, a credential a load rank used (replayed), an expired one,
    garbage after "munge:", and a credential for another job (binding);
  * with TLS, hostile connections: plain text to the TLS port (told so in clear text), half a
    handshake, a handshake and then silence, random bytes; each must be closed by the daemon.
"""
import asyncio
import hashlib
import hmac
import json
import random
import string
import time

from munge import OTHER, OWNER
from tls import HALF_HELLO

V = 2
HELLO_S = 10  # the daemon's --hello-timeout (its default): a silent connection is closed then
# What each hostile register's refusal says (besides code auth).
MUNGE_REFUSALS = {"other_uid": "belongs to another user", "replayed": "replayed",
                  "expired": "expired", "garbage": "invalid munge credential",
                  "binding": "is not for rank"}
TLS_HOSTILE = ("plain", "half", "silent", "random")
CREDENTIAL_CHARS = string.ascii_letters + string.digits + "+/=:"


def line(obj):
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


def settings(world, batch_per_rank=32, samples_per_rank=640):
    return {"policy": "dbs", "global_batch": batch_per_rank * world,
            "samples_per_epoch": samples_per_rank * world, "min_batch": 1, "max_batch": 0,
            "min_gain": 0.02, "rebalance_every": 0}


class Crowd:
    def __init__(self, args, token, port, tls=None, creds=None):
        """tls: an ssl.SSLContext (the daemon speaks TLS); creds: munge.Credentials (it takes
        munge credentials)."""
        self.a, self.token, self.port, self.tls, self.creds = args, token, port, tls, creds
        self.stop = asyncio.Event()
        self.latencies = []          # seconds, report -> plan, load agents
        self.handshake_s = []        # seconds, connect -> connected (and TLS handshake done)
        self.register_s = []         # seconds, connect -> the answer to the register
        self.counts = {"load_plans": 0, "load_errors": 0, "idle_dropped": 0, "deaf_closed": 0,
                       "garbage_answers": 0, "garbage_connections": 0, "big_plans": 0,
                       "connect_failed": 0}
        if creds:
            self.counts.update(munge_load_plans=0, munge_encode_failed=0)
        self.refusals = {}       # hostile register kind -> {answer code: count}
        self.tls_hostile = {}    # hostile TLS kind -> {"told" | "closed" | "open": count}
        self.unexpected = []     # answers to hostile clients that break the rules (up to 20)
        self.load_refused = []   # answers to load registers that were not a plan (up to 5)
        self.munge_used = {}     # (job, rank) -> the auth a munge load rank registered with
        self.munge_ready = asyncio.Event()
        self.open_now = 0
        self.open_peak = 0

    def key(self, job):
        return hmac.new(self.token.encode(), job.encode(), hashlib.sha256).hexdigest()

    def munge_job(self, j):
        return self.creds is not None and j % 2 == 1

    def note(self, what):
        if len(self.unexpected) < 20:
            self.unexpected.append(what)

    async def connect(self, raw=False):
        """A connection to the agents' port; raw: plain TCP even to a TLS port."""
        if self.tls is not None and not raw:
            r, w = await asyncio.open_connection("127.0.0.1", self.port, ssl=self.tls,
                                                 server_hostname="127.0.0.1",
                                                 ssl_handshake_timeout=60)
        else:
            r, w = await asyncio.open_connection("127.0.0.1", self.port)
        self.open_now += 1
        self.open_peak = max(self.open_peak, self.open_now)
        return r, w

    async def reconnect(self, raw=False):
        """connect(), retried every second while it fails; None once the soak is stopping."""
        while not self.stop.is_set():
            try:
                return await self.connect(raw)
            except (OSError, asyncio.TimeoutError):
                self.counts["connect_failed"] += 1
                await asyncio.sleep(1)
        return None

    def closed(self, w):
        self.open_now -= 1
        w.close()

    async def load_rank(self, j, rank, world):
        job, munge = "load-%d" % j, self.munge_job(j)
        while True:
            t0 = time.monotonic()
            conn = await self.reconnect()
            if conn is None:
                return
            self.handshake_s.append(time.monotonic() - t0)
            r, w = conn
            try:
                reg = {"v": V, "type": "register", "job": job, "rank": rank, "world": world,
                       "host": "soak", "config": settings(world)}
                if munge:
                    reg["auth"] = await self.creds.auth(OWNER, job, rank)
                else:
                    reg["token"] = self.key(job)
                w.write(line(reg))
                msg = json.loads(await r.readline())
                self.register_s.append(time.monotonic() - t0)
                if msg.get("type") != "plan":
                    self.counts["load_errors"] += 1
                    if len(self.load_refused) < 5:
                        self.load_refused.append("%s/%d: %s" % (job, rank, json.dumps(msg)[:300]))
                    return
                if munge:
                    self.munge_used[(job, rank)] = reg["auth"]
                    self.munge_ready.set()
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
                    if munge:
                        self.counts["munge_load_plans"] += 1
                    epoch, batch = msg["epoch"], msg["batch"]
            except RuntimeError:  # munged would not encode
                self.counts["munge_encode_failed"] += 1
            except (OSError, ConnectionError, ValueError):
                self.counts["load_errors"] += 1
            finally:
                self.closed(w)

    async def idle(self):
        while conn := await self.reconnect(raw=True):
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

    async def hostile_auth(self, rng, kind):
        """The "auth" of a hostile register of `kind` and the (job, rank) it presents it for."""
        (job, rank), used = rng.choice(sorted(self.munge_used.items()))
        if kind == "other_uid":
            return job, rank, await self.creds.auth(OTHER, job, rank)
        if kind == "replayed":
            return job, rank, used
        if kind == "expired":
            auth = await self.creds.auth(OWNER, job, rank, ttl_s=1)
            await asyncio.sleep(3)
            return job, rank, auth
        if kind == "garbage":
            return job, rank, "munge:" + "".join(
                rng.choice(CREDENTIAL_CHARS) for _ in range(rng.randint(1, 3000)))
        return job, rank, await self.creds.auth(OWNER, job + "-elsewhere", rank)  # binding

    async def hostile_munge(self, n):
        """Registers to the munge load jobs that must each be refused with code auth."""
        rng, kinds = random.Random(1000 + n), sorted(MUNGE_REFUSALS)
        await self.munge_ready.wait()
        i = n
        while not self.stop.is_set():
            kind = kinds[i % len(kinds)]
            i += 1
            try:
                job, rank, auth = await self.hostile_auth(rng, kind)
            except RuntimeError:
                self.counts["munge_encode_failed"] += 1
                await asyncio.sleep(1)
                continue
            conn = await self.reconnect()
            if conn is None:
                return
            r, w = conn
            codes = self.refusals.setdefault(kind, {})
            try:
                w.write(line({"v": V, "type": "register", "job": job, "rank": rank,
                              "world": self.a.load_world, "host": "hostile", "auth": auth}))
                raw = await asyncio.wait_for(r.readline(), timeout=30)
                msg = json.loads(raw) if raw else {"type": "closed"}
                code = msg.get("code") if msg.get("type") == "error" else msg.get("type")
                codes[code] = codes.get(code, 0) + 1
                if code != "auth" or MUNGE_REFUSALS[kind] not in msg.get("message", ""):
                    self.note("hostile %s register answered: %s" % (kind, raw[:300]))
            except (OSError, asyncio.TimeoutError, ValueError) as e:
                codes["no_answer"] = codes.get("no_answer", 0) + 1
                self.note("hostile %s register: no answer (%r)" % (kind, e))
            finally:
                self.closed(w)
            await asyncio.sleep(0.2 + 0.5 * rng.random())

    async def hostile_tls(self, n):
        """Connections that break TLS; the daemon must close each (and tell the plain one)."""
        rng = random.Random(2000 + n)
        i = n
        while not self.stop.is_set():
            kind = TLS_HOSTILE[i % len(TLS_HOSTILE)]
            i += 1
            conn = await self.reconnect(raw=kind != "silent")  # silent: the handshake completes
            if conn is None:
                return
            r, w = conn
            outcome = "open"
            try:
                if kind == "plain":
                    w.write(line({"v": V, "type": "heartbeat"}))
                elif kind == "half":
                    w.write(HALF_HELLO)
                elif kind == "random":
                    w.write(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 2000))))
                await w.drain()
                got = await asyncio.wait_for(r.read(), timeout=HELLO_S + 10)  # until EOF
                outcome = "told" if b"this port speaks TLS" in got else "closed"
            except asyncio.TimeoutError:
                outcome = "open"
            except OSError:  # reset, or the TLS layer's error at the close
                outcome = "closed"
            finally:
                self.closed(w)
            counts = self.tls_hostile.setdefault(kind, {})
            counts[outcome] = counts.get(outcome, 0) + 1
            if outcome == "open" or (kind == "plain" and outcome != "told"):
                self.note("hostile TLS %s connection: %s" % (kind, outcome))
            await asyncio.sleep(rng.random())

    def rules_held(self):
        """Every hostile kind was tried and refused as it must be."""
        ok = not self.unexpected
        if self.creds is not None:
            ok = ok and all(self.refusals.get(k, {}).get("auth", 0) > 0 for k in MUNGE_REFUSALS)
            ok = ok and self.counts["munge_load_plans"] > 0
        if self.tls is not None:
            ok = ok and all(sum(self.tls_hostile.get(k, {}).values()) > 0 for k in TLS_HOSTILE)
        return ok
