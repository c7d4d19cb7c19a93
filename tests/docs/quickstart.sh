# The README's quick start, as written: its agents/run-local.sh line (up to the comment) installs
# what is missing, builds build/ (up to date under meson test), trains the main job and closes
# with the efficiency line. tests/run.sh, the block's other line, is the runner of this test.
set -euo pipefail
if [ "$(realpath "${DBS_BUILD:-build}")" != "$(realpath build)" ]; then
  echo "skipped: run-local.sh builds build/, and this build is ${DBS_BUILD}"
  exit 77
fi
cmd=$(awk '/^## Quick start/ {q = 1} q && /^```sh/ {b = 1; next} b && /^```/ {exit} b' README.md |
  grep -m1 '^agents/run-local.sh' | sed 's/ *#.*//') || { echo "README's quick start has no agents/run-local.sh line"; exit 1; }
echo "running: $cmd"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
bash -c "$cmd" >"$out" 2>&1 || { tail -n 30 "$out"; echo "the quick start failed: $cmd"; exit 1; }
tail -n 3 "$out"
grep -q '^dbs: efficiency reached [0-9.]*% of ideal' "$out" || { echo "no efficiency line"; exit 1; }
[ -s out/summary.json ] || { echo "no out/summary.json"; exit 1; }
python3 - out/summary.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["epochs"]) == 5, "expected 5 epochs"
b = d["epochs"][-1]["batch"]
assert b[0] > b[1], f"rank 1 is slowed x3 from epoch 2, yet the last plan is {b}"
print("quick start ok: 5 epochs, last plan", b)
PY
