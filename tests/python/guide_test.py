"""docs/guides/pytorch.md as a new user follows it, its commands run as written: the install
block (the build's dbs-env.sh sourced, ~/dbs standing for this checkout) from a scratch folder
that is not the checkout, with HOME there too; then, in that folder and that environment, every
sh block whose note names this test: the guide's my_ddp.py (its python block, saved there)
launched on 2 ranks, printing every epoch's next plan; train.py stopped after one epoch with
--checkpoint and continued with --resume; and the daemon, its job key, train.py planned by it
and the job's series in its metrics (on two free ports of the test's in place of 7070 and
7071, so that runs on one machine do not collide). Also: `meson install` puts the package where
Debian's python3 looks."""

import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.skip_unless_ready()

GUIDE = "docs/guides/pytorch.md"
blocks = harness.guide_blocks(GUIDE, "tests/python/guide_test.py")
install = [b for b in blocks if "dbs-env.sh" in b]
launch = [b for b in blocks if "my_ddp.py" in b]
resume = [b for b in blocks if "--resume" in b]
daemon = [b for b in blocks if "dbs-scheduler serve" in b]
harness.check(len(install) == len(launch) == len(resume) == len(daemon) == 1
              and len(blocks) == 4,
              f"the guide has the install, launch, resume and daemon blocks ({len(blocks)} found)")

with tempfile.TemporaryDirectory(prefix="dbs-guide-") as home:
    work = os.path.join(home, "my-project")
    os.makedirs(work)
    with open(os.path.join(work, "my_ddp.py"), "w") as f:
        f.write(harness.python_block(GUIDE, "my_ddp.py"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DBS_ROOT")}
    env.update(HOME=home, OMP_NUM_THREADS="1")
    # The install block, this checkout's build for ~/dbs/build: then the environment it leaves.
    block = install[0].replace("~/dbs/build", harness.BUILD)
    rc, out, err = harness.shell(block + "\nenv -0", work, env)
    harness.check(rc == 0, f"the install block sources dbs-env.sh: {block!r}\n{err}")
    env = dict(item.split("=", 1) for item in out.split("\0") if "=" in item)
    p = subprocess.run(["/usr/bin/python3", "-c", "import dbs.torch; print(dbs.__file__)"],
                       cwd=work, env=env, capture_output=True, text=True)
    harness.check(p.returncode == 0 and p.stdout.startswith(harness.BUILD)
                  and env.get("DBS_ROOT") == harness.ROOT,
                  f"then dbs.torch imports from another folder, from this build "
                  f"({p.stdout.strip()}{p.stderr[-500:]}), DBS_ROOT is the checkout")

    rc, out, err = harness.shell(launch[0], work, env)
    lines = [line for line in out.splitlines() if "epoch " in line]
    harness.check(rc == 0 and len(lines) == 3,
                  f"the guide's torchrun line trains my_ddp.py 3 epochs and prints each: exit "
                  f"{rc}\n" + "\n".join(lines) + ("" if rc == 0 else f"\n{err[-3000:]}"))
    harness.check(all("next [" in line for line in lines), "each epoch prints the next plan")

    rc, out, err = harness.shell(resume[0], work, env)
    harness.check(rc == 0 and "resumed from out/run.pt at epoch 2" in out,
                  f"train.py --checkpoint, then --resume: exit {rc}, the second run says where "
                  f"it resumed\n{out[-1500:]}" + ("" if rc == 0 else f"\n{err[-3000:]}"))
    summary = json.load(open(os.path.join(work, "out", "resumed.json")))
    harness.check([e["epoch"] for e in summary["epochs"]] == [1, 2]
                  and out.count("epoch 1: wall") == 1 and out.count("epoch 2: wall") == 1,
                  "each run trained its one epoch, and the resumed summary holds both")

    ports = {"7070": str(harness.free_port()), "7071": str(harness.free_port())}
    block = re.sub(r"127\.0\.0\.1:(7070|7071)", lambda m: "127.0.0.1:" + ports[m.group(1)],
                   daemon[0])
    rc, out, err = harness.shell(block, work, env)
    series = [line for line in out.splitlines() if line.startswith("dbs_")]
    harness.check(rc == 0 and any(l.startswith('dbs_job_epoch{job_id="my-run"} 3')
                                  for l in series),
                  f"the daemon block: train.py planned by the daemon, and curl with the token "
                  f"shows the job's series (epoch 3): exit {rc}\n" + "\n".join(series[:8])
                  + ("" if rc == 0 else f"\n{out[-2000:]}\n{err[-3000:]}"))
    harness.check(out.count("from daemon") >= 1,
                  "the daemon planned at least one epoch (rank 0 says 'from daemon')")

installed = json.loads(subprocess.run(["meson", "introspect", "--installed", harness.BUILD],
                                      capture_output=True, text=True, check=True).stdout)
where = [os.path.dirname(os.path.dirname(v)) for v in installed.values()
         if v.endswith("/dbs/__init__.py")]
path = subprocess.run(["/usr/bin/python3", "-c", "import sys; print('\\n'.join(sys.path))"],
                      capture_output=True, text=True, check=True, env={}).stdout.split()
harness.check(len(where) == 1 and where[0] in path,
              f"meson install puts the package in {where}, on /usr/bin/python3's path")
