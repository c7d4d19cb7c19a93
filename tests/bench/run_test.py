#!/usr/bin/env python3
"""bench/run.py (tests/run.sh --bench) on its quickest benchmark, replay: the run's record
carries the machine's facts, the commit and the load; each figure is printed beside the committed
record with their ratio; a committed record made far better than any run can be (wall and CPU
time a hundredth) marks this run's figures WORSE and one made far worse (resident memory a
thousand times) marks it better; the same record measured on another CPU model has its times
shown but not judged, its count still judged; and an unknown benchmark is a usage error. Exits 0 when all
hold, 1 naming each that did not; DBS_BUILD names the build (default: build)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2]
RUN = SOURCE / "bench" / "run.py"
BUILD = os.environ.get("DBS_BUILD", str(SOURCE / "build"))
failures = []


def bench(results, out, *extra):
    return subprocess.run([sys.executable, str(RUN), "--build", BUILD, "--only", "replay",
                           "--out", str(out), "--results", str(results), *extra],
                          capture_output=True, text=True, timeout=600)


def require(what, ok, detail=""):
    if ok:
        print(f"ok: {what}")
    else:
        failures.append(f"{what}\n{detail[-2000:]}")


def main():
    with tempfile.TemporaryDirectory(prefix="dbs-bench-run-") as tmp:
        tmp = Path(tmp)
        results = tmp / "docs" / "results"
        results.mkdir(parents=True)
        shutil.copy(SOURCE / "docs" / "results" / "replay.jsonl", results)
        run = bench(results, tmp / "out")
        out = run.stdout + run.stderr
        require("the replay benchmark runs", run.returncode == 0, out)
        files = list((tmp / "out").glob("run-*.jsonl"))
        require("the run's records are written to --out", len(files) == 1, out)
        if files:
            rec = json.loads(files[0].read_text().splitlines()[0])
            m = rec.get("machine", {})
            require("a record carries the machine, the commit, the date and the load",
                    rec.get("study") == "replay-1000-ranks" and m.get("cpu")
                    and isinstance(m.get("vector_flags"), list) and m.get("peak_gflops_per_core", 0) > 0
                    and rec.get("commit") and rec.get("date") and len(rec.get("load", [])) == 2
                    and rec.get("cpu_s", 0) > 0, json.dumps(rec))
        committed = json.loads([l for l in (results / "replay.jsonl").read_text().splitlines()
                                if '"replay-1000-ranks"' in l][-1])
        require("each figure is printed beside the committed record",
                any(line.split()[:4] == ["replay-1000-ranks", "ranks=1000", "wall_s",
                                         f"{committed['wall_s']:.3g}"] for line in out.splitlines()),
                out)
        if not files:
            return finish()

        def rerun(record, out_dir):
            with open(results / "replay.jsonl", "a") as f:
                f.write(json.dumps(record) + "\n")
            run = bench(results, tmp / out_dir)
            out = run.stdout + run.stderr
            return out, {line.split()[2]: line for line in out.splitlines()
                         if line.startswith("replay-1000-ranks")}

        # Doctored from this run's record, so that it was measured on this machine's CPU.
        doctored = dict(rec, wall_s=rec["wall_s"] / 100, cpu_s=rec["cpu_s"] / 100,
                        rss_mb=rec["rss_mb"] * 1000)
        out, rows = rerun(doctored, "out2")
        require("a figure far worse than the committed record is marked WORSE",
                rows.get("wall_s", "").endswith("WORSE") and rows.get("cpu_s", "").endswith("WORSE"), out)
        require("a figure far better than the committed record is marked better",
                rows.get("rss_mb", "").endswith("better"), out)
        require("the summary counts them", "beyond the tolerance: 2 worse, 1 better" in out, out)

        elsewhere = dict(doctored, machine=dict(rec["machine"], cpu="Another CPU model"))
        out, rows = rerun(elsewhere, "out4")
        require("a time measured on another CPU model is shown, not judged",
                rows.get("wall_s", "").endswith("other CPU") and rows.get("cpu_s", "").endswith("other CPU")
                and "other CPU: committed on Another CPU model" in out, out)
        require("a count is judged on any CPU model", rows.get("rss_mb", "").endswith("better"), out)
        require("the summary counts only what was judged",
                "beyond the tolerance: 0 worse, 1 better" in out, out)

        run = bench(results, tmp / "out3", "--only", "nothing")
        require("an unknown benchmark is a usage error naming it",
                run.returncode == 2 and "unknown benchmark(s) nothing" in run.stderr, run.stderr)
    return finish()


def finish():
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
