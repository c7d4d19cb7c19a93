#!/usr/bin/env python3
"""Every file a comment names is in the repository.

Reads the comments of the tracked source files (C and C++ // and /* */, the # comments of
Python, shell and meson files, Python docstrings) and checks the names in them that point into
the repository: every name of a page (ending in .md, as a path or alone), every path that starts
with one of the repository's top-level folders (lib/policy/plan.h, tests/e2e/common.bash,
docs/README.md) and every public header named as <dbs/...>. A name resolves to a tracked file or
folder, from the source root or from the commenting file's folder (a template ending in .in
counts for the file it makes). A path with a placeholder part (a folder or, but for a page, a
file stem in capitals, such as DIR/ or NAME.jsonl, or a *) is a pattern, not a name, and is
skipped; a page's own name may be in capitals (README.md), so a page is always checked. Bare
names of other kinds (a file a program writes, a system header) are skipped. Run from the
source root; exits 1 naming each comment at fault, as FILE:LINE: NAME.
"""
import os
import re
import subprocess
import sys

SOURCE_EXT = {".c", ".h", ".cpp", ".py", ".sh", ".bash", ".sbatch", ".in"}
C_LIKE = {".c", ".h", ".cpp"}
NAME = re.compile(r"(?<![\w.$<{/-])((?:[\w.-]+/)*[\w-][\w.-]*\.[a-z]+)(?![\w/])")
HEADER = re.compile(r"<dbs/(\w[\w.]*)>")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9]*(?:_|$)|\*")


def tracked():
    try:
        run = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True)
        return [f for f in run.stdout.split("\n") if f]
    except (OSError, subprocess.CalledProcessError):  # not a checkout: what is on disk
        return [os.path.relpath(os.path.join(d, f)) for d, _, fs in os.walk(".")
                if not d.startswith(("./build", "./.git")) for f in fs]


def comments(path, text):
    """(line, text) of each comment of the file."""
    ext = os.path.splitext(path)[1]
    lines = text.split("\n")
    if ext in C_LIKE:
        for m in re.finditer(r'"(?:\\.|[^"\\\n])*"|//[^\n]*|/\*.*?\*/', text, re.S):
            if not m.group(0).startswith('"'):
                yield text.count("\n", 0, m.start()) + 1, m.group(0)
        return
    for i, line in enumerate(lines, 1):
        m = re.search(r"(?:^|\s)#(?!!)(.*)", line)
        if m:
            yield i, m.group(1)
    if ext == ".py":
        for m in re.finditer(r'"""(.*?)"""', text, re.S):
            yield text.count("\n", 0, m.start()) + 1, m.group(1)


def main():
    files = tracked()
    have = set(files)
    for f in files:
        d = os.path.dirname(f)
        while d:
            have.add(d)
            d = os.path.dirname(d)
    top = {f.split("/", 1)[0] for f in files if "/" in f}
    pages = [f for f in files if f.endswith(".md")]

    def exists(name):
        return name in have or name + ".in" in have

    bad = []
    for path in files:
        name = os.path.basename(path)
        if os.path.splitext(name)[1] not in SOURCE_EXT and name != "meson.build":
            continue
        try:
            text = open(path, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError):
            continue
        for line, comment in comments(path, text):
            for m in HEADER.finditer(comment):
                if not exists("include/dbs/" + m.group(1)):
                    bad.append(f"{path}:{line}: <dbs/{m.group(1)}>")
            for m in NAME.finditer(comment):
                n = m.group(1).rstrip(".")
                parts = n.split("/")
                stem = parts[-1].split(".")[:-1]
                if any(PLACEHOLDER.search(p) for p in parts[:-1]) or (
                        not n.endswith(".md") and any(PLACEHOLDER.search(p) for p in stem)):
                    continue
                if n.endswith(".md"):
                    if not any(p == n or p.endswith("/" + n) for p in pages):
                        bad.append(f"{path}:{line}: {n}")
                elif len(parts) > 1 and parts[0] in top and not exists(n) and not exists(
                        os.path.normpath(os.path.join(os.path.dirname(path), n))):
                    bad.append(f"{path}:{line}: {n}")
    for b in bad:
        print(f"FAIL: {b}: no such file in the repository")
    print(f"comments: {len(files)} files, {len(bad)} name(s) of missing files")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
