#!/usr/bin/env python3
"""bench/tables.py --check on a copy of README.md and docs/results: the committed pages pass;
a record changed under a page, a figure typed over on a page, a region of an unknown table and
a current table that is neither generated nor marked as typed each fail, naming the page (the
same table marked as typed passes); and --write makes a page that disagrees agree again. Exits
0 when all hold, 1 naming each that did not."""
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


def unmarked(text, name, instead=""):
    """The page's text with the region of table `name` made a plain table: its start line
    replaced by `instead`, its end line taken away."""
    start_line, end_line = f"<!-- table: {name} -->\n", "<!-- end table -->\n"
    start = text.index(start_line)
    end = text.index(end_line, start)
    return text[:start] + instead + text[start + len(start_line):end] + text[end + len(end_line):]


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

        root = fresh(tmp, "stale")  # a record measured at a commit whose code changed since
        old = json.loads((root / "docs/results/engine.jsonl").read_text().splitlines()[0])
        old.update(commit="17f7a045849ccf453ca74101927319bcebce4282", date="2026-11-26T10:00:00Z",
                   machine={"cpu": "AMD EPYC", "logical_cpus": 2, "vector_flags": ["avx2", "fma"],
                            "peak_gflops_per_core": 117.0}, load=[0.1, 0.2])
        with open(root / "docs/results/engine.jsonl", "a") as f:
            f.write(json.dumps(old) + "\n")
        check(root, "--write")
        text = " ".join((root / "docs/results/engine.md").read_text().split())  # unwrapped
        if "Measured 2026-11-26" in text and "The code measured has changed since" in text \
                and "bench/train_bench.cpp" in text:
            print("ok: a table whose code changed since its record says so")
        else:
            failures.append("a table whose code changed since its record says so:\n" + text[:3000])

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

        root = fresh(tmp, "untracked")  # a generated table's region markers taken away
        page = root / "docs/results/balance.md"
        page.write_text(unmarked(page.read_text(), "balance-3rank"))
        expect("a current table neither generated nor marked typed fails", root, 1,
               "docs/results/balance.md:", "neither generated")

        root = fresh(tmp, "typed")  # the same table marked as typed
        page = root / "docs/results/balance.md"
        page.write_text(unmarked(page.read_text(), "balance-3rank",
                                 "<!-- typed table: no records -->\n"))
        expect("a current table marked typed passes", root, 0, "0 problem(s)")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
