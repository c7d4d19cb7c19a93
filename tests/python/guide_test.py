"""docs/guides/pytorch.md as a new user follows it: its script (the ```python block that begins
with "# my_ddp.py") saved as my_ddp.py and its torchrun line run as written, from a folder
where build/ is this build, on 2 ranks; every epoch prints the plan."""

import os
import re
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

harness.skip_unless_ready()

guide = open(os.path.join(harness.ROOT, "docs/guides/pytorch.md")).read()
script = re.search(r"```python\n(# my_ddp\.py\n.*?)```", guide, re.S)
command = re.search(r"```sh\n(PYTHONPATH=build/python [^\n]* my_ddp\.py)\n```", guide)
harness.check(script is not None and command is not None,
              "the guide has the my_ddp.py script and its torchrun line")
build = os.path.dirname(os.environ["PYTHONPATH"].split(":")[0])

with tempfile.TemporaryDirectory() as tmp:
    os.symlink(build, os.path.join(tmp, "build"))
    with open(os.path.join(tmp, "my_ddp.py"), "w") as f:
        f.write(script.group(1))
    env = dict(os.environ, OMP_NUM_THREADS="1", TMPDIR=tmp)
    del env["PYTHONPATH"]  # the command sets it, as a user's shell would not have it
    p = subprocess.Popen(["bash", "-c", command.group(1)], cwd=tmp, env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        harness.fail(f"{command.group(1)}: no end after 300 s\n{err[-3000:]}")

lines = [l for l in out.splitlines() if "epoch " in l]
harness.check(p.returncode == 0 and len(lines) == 3,
              f"the guide's command trains 3 epochs and prints each: exit {p.returncode}\n"
              + "\n".join(lines) + ("" if p.returncode == 0 else f"\n{err[-3000:]}"))
harness.check(all("next [" in l for l in lines), "each epoch prints the next plan")
