#!/usr/bin/env python3
"""bench/tables.py --check on a copy of README.md and docs/results: the committed pages pass;
a record changed under a page, a figure typed over on a page, a region of an unknown table and
a current table that is neither generated nor marked as typed each fail, naming the page; and
--write makes a page that disagrees agree again. Exits 0 when all hold, 1 naming each that
did not."""
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2]
TABLES = SOURCE / "bench" / "tables.py"
failures = []


def check(root, mode="--check"):
    run = subprocess.run([sys.executable, str(TABLES), mode, "--root", str(root)],
                         capture_output=True, text=True)
    return run.returncode, run.stdout + run.stderr


def fresh(tmp, name):
    root = Path(tmp) / name
    (root / "docs").mkdir(parents=True)
    shutil.copy(SOURCE / "README.md", root / "README.md")
    shutil.copytree(SOURCE / "docs" / "results", root / "docs" / "results")
    return root


def expect(name, root, code, *needles):
    got, out = check(root)
    if got != code or any(n not in out for n in needles):
        failures.append(f"{name}: expected exit {code} naming {needles}, got {got}:\n{out[-1500:]}")
    else:
        print(f"ok: {name}")


def edit_record(path, study, match, field, value):
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        r = json.loads(line)
        if r.get("study") == study and all(r.get(k) == v for k, v in match.items()):
            r[field] = value
            lines[i] = json.dumps(r)
    path.write_text("\n".join(lines) + "\n")


def main():
    with tempfile.TemporaryDirectory(prefix="dbs-tables-") as tmp:
        root = fresh(tmp, "committed")
        expect("the committed pages agree with their records", root, 0, "0 problem(s)")

        root = fresh(tmp, "record")  # a figure 2x worse in the records, the pages unchanged
        edit_record(root / "docs/results/engine.jsonl", "engine-train", {"threads": 1},
                    "images_per_s", 651.5)
        expect("a changed record fails its page and the README", root, 1,
               "docs/results/engine.md differs from its records", "README.md differs",
               "| 1 | 652 |")
        check(root, "--write")
        expect("--write makes them agree again", root, 0, "0 problem(s)")

        root = fresh(tmp, "page")  # a figure typed over on the page
        page = root / "docs/results/replay.md"
        page.write_text(page.read_text().replace("| 26.33 s |", "| 25.00 s |"))
        expect("a figure typed over fails", root, 1, "docs/results/replay.md differs",
               "-| `constant-dbs` | rank 1 slowed ×3 from the start | 25.00 s |")

        root = fresh(tmp, "unknown")
        page = root / "docs/results/engine.md"
        page.write_text(page.read_text().replace("<!-- table: engine-train -->",
                                                 "<!-- table: engine-nothing -->"))
        expect("a region of an unknown table fails", root, 1, "no table named 'engine-nothing'")

        root = fresh(tmp, "untracked")
        page = root / "docs/results/balance.md"
        page.write_text(page.read_text().replace(
            "<!-- typed table: counts over 36 runs", "<!-- counts over 36 runs", 1))
        expect("a current table neither generated nor marked typed fails", root, 1,
               "docs/results/balance.md:", "neither generated")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
