"""Benchmark records: JSON lines, one measurement each, read and written the same way by the
benchmark run (bench/run.py), the regression gate (bench/gate.py) and the table generator
(bench/tables.py).

A record is one JSON object on one line. Every record has "study" (what was measured, the key
the tables and the comparisons select on) and "command" (how). A record written by a benchmark
run also carries "date" (UTC, ISO 8601), "commit" (the checked-out commit, "+dirty" when the
work tree differed from it), "machine" (machine_facts) and "load" (the 1-minute load average
before and after), and, measured over several runs, "runs": {figure: [one value per run]} beside
the figures themselves, which are the medians of those runs.
"""
import json
import os
import platform
import re
import statistics
import subprocess
from datetime import datetime, timezone
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent  # the repository's root

# The vector extensions that decide which kernels run and what the FMA peak is.
VECTOR_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx_vnni",
                "avx512_bf16")


class RecordError(Exception):
    """A records file that cannot be read: the message names the file and line."""


def read_jsonl(path):
    """The records of a JSON-lines file, in order; [] when the file does not exist."""
    path = Path(path)
    if not path.exists():
        return []
    records = []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise RecordError(f"{path}:{lineno}: not JSON: {e}") from None
        if not isinstance(record, dict):
            raise RecordError(f"{path}:{lineno}: a record is a JSON object, got {type(record).__name__}")
        records.append(record)
    return records


def append_jsonl(path, records):
    """Appends the records to a JSON-lines file, one compact line each."""
    with open(path, "a") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")


def figure(record, name):
    """A figure of a record by name; "a.b" reads record["a"]["b"]. A list (the values of
    several runs in older records) gives its median; None where the record has no such figure."""
    value = record
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    if isinstance(value, list):
        numbers = [v for v in value if isinstance(v, (int, float))]
        return statistics.median(numbers) if numbers else None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def spread(values):
    """Relative run-to-run spread of a figure: (largest - smallest) / median; 0 for one value."""
    values = [v for v in values if v is not None]
    if len(values) < 2:
        return 0.0
    mid = statistics.median(values)
    return (max(values) - min(values)) / abs(mid) if mid else 0.0


def load_average():
    """The 1-minute load average, or None where /proc/loadavg cannot be read."""
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def vector_flags():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                return [f for f in VECTOR_FLAGS if f in flags]
    except OSError:
        pass
    return []


def commit():
    """The checked-out commit, with "+dirty" when tracked files differ from it; "unknown"
    outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=SOURCE, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=SOURCE, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def machine_facts(peak):
    """What a figure depends on besides the code: CPU model, logical CPUs, vector extensions,
    and the measured fp32 FMA peak of one core (dbs-bench peak's JSON)."""
    return {
        "cpu": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "vector_flags": vector_flags(),
        "peak_gflops_per_core": round(peak["gflops_per_core"], 1),
        "peak_gflops_per_cpu_s": round(peak.get("gflops_per_cpu_s", 0.0), 1),
        "kernel": platform.release(),
    }


def now_utc():
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def is_commit(text):
    return bool(re.fullmatch(r"[0-9a-f]{40}", text or ""))
