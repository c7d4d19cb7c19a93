# kill -9 of the daemon at 20 random moments of a running 2-rank job (agents speaking the
# protocol from Python, with the job's key), each time restarted on the same state directory:
# every restart succeeds, the job reaches its last epoch on the daemon's plans, and the daemon's
# trace holds every epoch's reports and plan exactly once. DBS_KILL9_SEED picks the moments.
source "$(dirname "$0")/common.bash"
head -c 32 /dev/urandom | base64 >"$TMP/token"
chmod 600 "$TMP/token"
python3 - "$SCHED" "$TMP" "${DBS_KILL9_SEED:-$RANDOM}" <<'PY'
import json, os, random, socket, subprocess, sys, time
sched, tmp, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
EPOCHS, KILLS, JOB = 30, 20, "k9"
rng = random.Random(seed)
log = open(tmp + "/daemon.log", "ab")
key = subprocess.check_output([sched, "job-key", "--token-file", tmp + "/token", JOB]).decode().strip()
daemon, port, restarts = None, None, 0

def start():
    global daemon, port
    ready = tmp + "/ready.json"
    if os.path.exists(ready):
        os.remove(ready)
    daemon = subprocess.Popen([sched, "serve", "--listen", "127.0.0.1:0", "--token-file",
                               tmp + "/token", "--state-dir", tmp + "/state", "--ready-file", ready,
                               "--report-timeout", "60"], stdout=log, stderr=log)
    for _ in range(400):
        if os.path.exists(ready) and os.path.getsize(ready) > 0:
            port = int(json.load(open(ready))["listen"].rsplit(":", 1)[1])
            return
        if daemon.poll() is not None:
            sys.exit("restart failed: the daemon exited %d (seed %d)" % (daemon.returncode, seed))
        time.sleep(0.025)
    sys.exit("the daemon did not start (seed %d)" % seed)

def kill():
    global restarts
    daemon.kill()  # SIGKILL
    daemon.wait()
    restarts += 1
    start()

class Rank:
    def __init__(self, r):
        self.r, self.sock, self.buf = r, None, b""
    def send(self, obj):
        self.sock.sendall((json.dumps(obj) + "\n").encode())
    def line(self):
        while b"\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("closed")
            self.buf += data
        l, self.buf = self.buf.split(b"\n", 1)
        return json.loads(l)
    def connect(self):  # returns the plan the daemon answers the register with
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""
        self.send({"v": 2, "type": "register", "job": JOB, "token": key, "rank": self.r,
                   "world": 2, "host": "h%d" % self.r,
                   "config": {"policy": "dbs", "global_batch": 64, "samples_per_epoch": 640,
                              "min_batch": 1, "max_batch": 0, "min_gain": 0.02}})
        m = self.line()
        assert m["type"] == "plan", m
        return m
    def report(self, epoch, batch):
        speed = 3000.0 if self.r == 0 else 1000.0
        self.send({"v": 2, "type": "report", "job": JOB, "rank": self.r, "epoch": epoch,
                   "batch": batch, "samples": 10 * batch, "steps": 10,
                   "compute_s": 10 * batch / speed, "comm_s": 0.01, "step_rate_median": 0})

# The kill moments: (epoch, phase), phase 0 before the reports, 1 between the two ranks'
# reports, 2 after both reports (the plan may or may not be journalled yet).
moments = sorted(rng.sample([(e, p) for e in range(1, EPOCHS + 1) for p in range(3)], KILLS))
start()
ranks = [Rank(0), Rank(1)]
plan = [r.connect() for r in ranks]  # each rank's share of the plan (protocol v2)
epoch = 1
while epoch <= EPOCHS:
    try:
        assert plan[0]["hash"] == plan[1]["hash"], plan
        if plan[0]["epoch"] == epoch + 1:  # planned before a kill: its plan came with the register
            epoch += 1
            continue
        assert plan[0]["epoch"] == epoch, (plan[0]["epoch"], epoch)
        for phase, r in enumerate(ranks):
            if (epoch, phase) in moments:
                moments.remove((epoch, phase))
                kill()
                raise ConnectionError("killed")
            r.report(epoch, plan[r.r]["batch"])
        if (epoch, 2) in moments:
            moments.remove((epoch, 2))
            time.sleep(rng.random() * 0.01)
            kill()
            raise ConnectionError("killed")
        plans = [r.line() for r in ranks]
        assert plans[0]["hash"] == plans[1]["hash"] and plans[0]["epoch"] == epoch + 1, plans
        assert [p["rank"] for p in plans] == [0, 1], plans
        plan = plans
        epoch += 1
    except (ConnectionError, OSError):
        for r in ranks:
            r.sock.close()
        plan = [r.connect() for r in ranks]  # the daemon's current plan
for r in ranks:
    r.send({"v": 2, "type": "goodbye", "done": True})
    assert r.line()["type"] == "goodbye"
daemon.terminate()
assert daemon.wait() == 0
trace = [json.loads(l) for l in open(tmp + "/state/traces/%s.jsonl" % JOB)]
plans = [t["epoch"] for t in trace if t["type"] == "plan"]
reports = sorted((t["epoch"], t["rank"]) for t in trace if t["type"] == "rank")
assert plans == list(range(1, EPOCHS + 2)), plans
assert reports == [(e, r) for e in range(1, EPOCHS + 1) for r in (0, 1)], reports
print("kill9: %d restarts after kill -9 (seed %d), %d epochs, every epoch in the trace once"
      % (restarts, seed, EPOCHS))
PY
