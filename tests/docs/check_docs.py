#!/usr/bin/env python3
"""The docs test: README.md and docs/ against the code they describe.

  check_docs.py options   every options page lists exactly the long options its binary's
                          --help prints, for every subcommand (both directions)
  check_docs.py links     every relative link and image resolves to a file, and every #anchor
                          into a markdown file to one of its headings
  check_docs.py commands  every ```sh block is either run here (a "<!-- run by: docs-commands -->"
                          line just above it) or names the registered test that covers it
                          ("<!-- covered by: TEST ... -->"); the runnable ones are run
  check_docs.py style     no commit hash, dated run narrative or issue number in the README,
                          the concepts, the guides or the reference (the results pages date
                          their rows; history is in git and CHANGELOG.md)

Run from the source root; DBS_BUILD names the build directory (default: build). Exits 0 when
every check passes, 1 naming each failure.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path.cwd()
BUILD = Path(os.environ.get("DBS_BUILD", "build")).resolve()

# Binaries with an options page: name -> (path in the build, the source folder that builds it).
BINARIES = {
    "dbs-agent": ("agents/dbs-agent", "agents"),
    "dbs-scheduler": ("scheduler/dbs-scheduler", "scheduler"),
    "dbs-bench": ("bench/dbs-bench", "bench"),
    "dbs-lab": ("lab/dbs-lab", "lab"),
}

# Pages written on other branches: a link to one is checked once the page exists.
PENDING_PAGES = {
    "docs/guides/scheduler-state.md",
    "docs/guides/pytorch.md",
    "docs/reference/library.md",
}

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def markdown_files():
    files = [SOURCE / "README.md", SOURCE / "CHANGELOG.md", SOURCE / "traces" / "README.md"]
    files += sorted((SOURCE / "docs").rglob("*.md"))
    return [f for f in files if f.exists()]


def rel(path):
    return str(Path(path).resolve().relative_to(SOURCE))


def strip_code(text):
    """The text with fenced blocks and inline code spans blanked (line numbers kept)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
            continue
        out.append("" if fenced else re.sub(r"`[^`]*`", "``", line))
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# options

def help_options(help_text):
    """Long options and subcommands from CLI11's --help text."""
    options, subcommands, section = set(), set(), None
    for line in help_text.splitlines():
        if re.match(r"^\S.*:\s*$", line):
            section = line.strip().rstrip(":").lower()
            continue
        if section is None or section.startswith("positionals"):
            continue
        if section.startswith("subcommands"):
            m = re.match(r"^  ([a-z][a-z0-9-]*)\s", line + " ")  # descriptions are indented further
            if m:
                subcommands.add(m.group(1))
            continue
        if re.match(r"^  -", line):
            names = line.split()[0]  # "-h,--help" or "--name": its default may quote others
            options.update(re.findall(r"(?<![\w-])--([a-z0-9][a-z0-9-]*)", names))
    return options, subcommands


def page_sections(text):
    """{command words: set of long options} from "<!-- options: CMD -->" sections of a page.

    A section runs to the next marker or heading of level 1 or 2; its options are the `--name`
    at the start of a list item or a table row."""
    sections, current = {}, None
    for line in text.splitlines():
        m = re.match(r"^<!-- options: (.+?) -->\s*$", line)
        if m:
            current = tuple(m.group(1).split())
            sections.setdefault(current, set())
            continue
        if re.match(r"^#{1,2} ", line):
            current = None
            continue
        if current is None:
            continue
        m = re.match(r"^\s*(?:[-*]|\|)\s*`(-[^`]*)`", line)
        if m:
            sections[current].update(re.findall(r"(?<![\w-])--([a-z0-9][a-z0-9-]*)", m.group(1)))
    return sections


def check_options():
    pages = sorted((SOURCE / "docs" / "reference").glob("*.md"))
    checked = 0
    # Subcommands whose page's binary is not in this tree (its source folder absent): another
    # binary may still carry them until that one lands, and they are documented there.
    elsewhere = {}
    for page in pages:
        for cmd in page_sections(page.read_text()):
            if cmd[0] in BINARIES and not (SOURCE / BINARIES[cmd[0]][1]).is_dir() and len(cmd) > 1:
                elsewhere[cmd[1]] = f"{rel(page)} ({cmd[0]}, whose {BINARIES[cmd[0]][1]}/ is not in this tree)"
    for page in pages:
        sections = page_sections(page.read_text())
        if not sections:
            continue
        names = {cmd[0] for cmd in sections}
        if len(names) != 1 or next(iter(names)) not in BINARIES:
            fail(f"{rel(page)}: its options sections name {sorted(names)}, not one known binary")
            continue
        name = next(iter(names))
        binary_rel, folder = BINARIES[name]
        binary = BUILD / binary_rel
        if not binary.exists():
            if not (SOURCE / folder).is_dir():
                print(f"skip: {rel(page)}: {folder}/ is not in this tree, so {name} is not built")
                continue
            fail(f"{rel(page)}: {binary} does not exist (build it)")
            continue
        # Walk the command tree from the top and from every section of the page: each
        # subcommand --help lists needs a section, and each section's options are --help's.
        todo, seen = [(name,)] + sorted(sections), set()
        while todo:
            cmd = todo.pop(0)
            if cmd in seen:
                continue
            seen.add(cmd)
            run = subprocess.run([str(binary), *cmd[1:], "--help"], capture_output=True,
                                 text=True, timeout=60)
            if run.returncode != 0:
                fail(f"{' '.join(cmd)} --help exited {run.returncode}: {run.stderr.strip()}")
                continue
            opts, subs = help_options(run.stdout)
            for sub in sorted(subs):
                if cmd + (sub,) not in sections and len(cmd) == 1 and sub in elsewhere:
                    print(f"skip: {' '.join(cmd)} {sub}: documented on {elsewhere[sub]}")
                else:
                    todo.append(cmd + (sub,))
            if cmd not in sections:
                fail(f"{rel(page)}: no section '<!-- options: {' '.join(cmd)} -->' "
                     f"for {' '.join(cmd)} (--help lists {', '.join('--' + o for o in sorted(opts))})")
                continue
            on_page = sections[cmd]
            missing, extra = sorted(opts - on_page), sorted(on_page - opts)
            if missing:
                fail(f"{rel(page)}: {' '.join(cmd)}: in --help but not on the page: "
                     + ", ".join("--" + o for o in missing))
            if extra:
                fail(f"{rel(page)}: {' '.join(cmd)}: on the page but not in --help: "
                     + ", ".join("--" + o for o in extra))
            checked += 1
    print(f"options: {checked} command(s) checked against --help")


# ---------------------------------------------------------------------------------------------
# links

def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    text = text.lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    found, counts = set(), {}
    fenced = False
    for line in path.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(1))
            n = counts.get(s, 0)
            counts[s] = n + 1
            found.add(s if n == 0 else f"{s}-{n}")
    return found


def check_links():
    count = 0
    for md in markdown_files():
        text = strip_code(md.read_text())
        for lineno, line in enumerate(text.split("\n"), 1):
            for target in re.findall(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", line):
                if re.match(r"^[a-z]+:", target):
                    continue
                count += 1
                where = f"{rel(md)}:{lineno}"
                path_part, _, anchor = target.partition("#")
                dest = (md.parent / path_part).resolve() if path_part else md.resolve()
                try:
                    dest_rel = rel(dest)
                except ValueError:
                    fail(f"{where}: {target} points outside the repository")
                    continue
                if not dest.exists():
                    if dest_rel in PENDING_PAGES:
                        print(f"pending: {where}: {target} (written on another branch)")
                        continue
                    fail(f"{where}: {target}: no such file {dest_rel}")
                    continue
                if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                    fail(f"{where}: {target}: {dest_rel} has no heading with anchor #{anchor}")
    print(f"links: {count} relative link(s) checked")


# ---------------------------------------------------------------------------------------------
# commands

def registered_tests():
    """The registered tests' names, and the scripts they run (paths from the source root)."""
    run = subprocess.run(["meson", "introspect", str(BUILD), "--tests"], capture_output=True,
                         text=True, check=True)
    names = set()
    for t in json.loads(run.stdout):
        names.add(t["name"])
        for arg in t["cmd"]:
            path = Path(arg).resolve()
            if path.is_file() and path.is_relative_to(SOURCE.resolve()):
                names.add(str(path.relative_to(SOURCE.resolve())))
    return names


def sh_blocks(md):
    """(first line number, note above the block or None, the block's text) per ```sh block."""
    lines = md.read_text().split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```sh":
            start = i
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            k = start - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            note = lines[k].strip() if k >= 0 and lines[k].strip().startswith("<!--") else None
            yield start + 1, note, "\n".join(lines[start + 1:j])
            i = j
        i += 1


def run_block(block, where):
    with tempfile.TemporaryDirectory(prefix="dbs-docs-") as tmp:
        for entry in SOURCE.iterdir():
            if entry.name.startswith("build") or entry.name in ("out", ".git"):
                continue
            os.symlink(entry, Path(tmp) / entry.name)
        os.symlink(BUILD, Path(tmp) / "build")
        os.mkdir(Path(tmp) / "out")
        run = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp,
                             capture_output=True, text=True, timeout=600)
        if run.returncode != 0:
            tail = "\n".join((run.stdout + run.stderr).strip().splitlines()[-15:])
            fail(f"{where}: the block exited {run.returncode}:\n{block}\n--- output (end):\n{tail}")
            return False
    return True


def check_commands():
    tests = registered_tests()
    ran = covered = untested = 0
    for md in [SOURCE / "README.md"] + sorted((SOURCE / "docs").rglob("*.md")):
        for lineno, note, block in sh_blocks(md):
            where = f"{rel(md)}:{lineno}"
            m_run = note and re.match(r"^<!-- run by: docs-commands -->$", note)
            m_cov = note and re.match(r"^<!-- covered by: (.+?) -->$", note)
            m_untested = note and re.match(r"^<!-- untested: (.+?) -->$", note)
            if m_untested:  # listed, so the gap stays visible
                print(f"{where}: not run by any test: {m_untested.group(1)}")
                untested += 1
            elif m_run:
                ran += run_block(block, where)
            elif m_cov:
                names = [re.split(r"[\s(]", part.strip())[0] for part in m_cov.group(1).split(",")]
                for name in names:
                    if name not in tests:
                        fail(f"{where}: the note names '{name}', which is not a registered test")
                covered += 1
            else:
                fail(f"{where}: a sh block with neither '<!-- run by: docs-commands -->' nor "
                     "'<!-- covered by: TEST -->' on the line above it")
    print(f"commands: {ran} block(s) run, {covered} covered by a named test, {untested} untested")


# ---------------------------------------------------------------------------------------------
# style

NARRATIVE = [
    (re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b"), "a commit hash"),
    (re.compile(r"\b20\d\d-\d\d-\d\d\b"), "a date"),
    (re.compile(r"\b\d\d:\d\d[–-]\d\d:\d\d\b"), "a time of day"),
    (re.compile(r"\bissue \d+", re.I), "an issue number"),
    (re.compile(r"\bsession\b", re.I), "session detail"),
]


def check_style():
    files = [SOURCE / "README.md"]
    for part in ("concepts", "guides", "reference"):
        files += sorted((SOURCE / "docs" / part).glob("*.md"))
    for md in files:
        text = strip_code(md.read_text())
        for lineno, line in enumerate(text.split("\n"), 1):
            for pattern, what in NARRATIVE:
                m = pattern.search(line)
                if m:
                    fail(f"{rel(md)}:{lineno}: {what} ('{m.group(0)}') outside a code span")
    print(f"style: {len(files)} page(s) checked")


def main():
    modes = {"options": check_options, "links": check_links, "commands": check_commands,
             "style": check_style}
    if len(sys.argv) != 2 or sys.argv[1] not in modes:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    modes[sys.argv[1]]()
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
