"""The benchmark: in-process against the peers, over HTTP against waitress's
ceiling, SQLite against memory, and flat cost as the collection grows.

    .venv/bin/python bench/run.py [--quick] [--out bench/results.md]

Prints a Markdown table of medians and ratios and writes it to ``--out``.
``--quick`` (under a minute) runs fewer, shorter rounds and grows the
collection to 100,000 users rather than 1,000,000.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import inprocess  # noqa: E402
import overhttp  # noqa: E402
import scale  # noqa: E402

TARGETS_IN_PROCESS = {"GET /users/1": 0.75, "GET /users?limit=100": 0.25,
                      "POST /users": 0.75, "PUT /users/2": 0.75}
TARGETS_HTTP = {"GET /users/1": 0.90, "GET /users?limit=100": 0.75, "POST /users": 0.80}
TARGETS_SQLITE = {"GET /users/1": 0.95, "GET /users?limit=100": 0.85, "POST /users": 0.85}


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = "wrk" if shutil.which("wrk") else "a Python load generator (wrk not installed)"
    return (f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, "
            f"{platform.system()} {platform.release()}; over HTTP: {load}")


def mark(ratio: float, target: float, lower_is_better: bool) -> str:
    met = ratio <= target if lower_is_better else ratio >= target
    return f"{ratio:.2f} {'✓' if met else '✗'} (target {'≤' if lower_is_better else '≥'} {target})"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer, shorter rounds (under a minute)")
    p.add_argument("--out", default=str(Path(__file__).resolve().parent / "results.md"))
    args = p.parse_args()
    quick = args.quick
    started = time.monotonic()
    lines = [f"# usersvc benchmark, {time.strftime('%Y-%m-%d')}", "",
             f"Machine: {machine()}.",
             f"Command: `{' '.join(['bench/run.py', *sys.argv[1:]])}`.", ""]

    print("in-process ...", file=sys.stderr)
    ip = inprocess.run(rounds=5 if quick else 21, count=1000 if quick else 2000)
    apps = list(next(iter(ip.values())))
    lines += ["## In-process, µs per request (memory store, 1,000 users; medians)", "",
              "| operation | " + " | ".join(apps) + " | usersvc ÷ Falcon |",
              "|---|" + "---:|" * (len(apps) + 1)]
    for op, by in ip.items():
        ratio = by["usersvc"] / by["Falcon"]
        lines.append(f"| {op} | " + " | ".join(f"{by[a]:.1f}" for a in apps)
                     + f" | {mark(ratio, TARGETS_IN_PROCESS[op], True)} |")

    print("over HTTP ...", file=sys.stderr)
    http = overhttp.run(rounds=1 if quick else 3, seconds=2 if quick else 4)
    names = ["waitress, fixed body (ceiling)", "fixed body, usersvc's headers", "usersvc",
             "usersvc, no access log", "Falcon"]
    lines += ["", "## Over HTTP, requests per second (waitress 4 threads on one core, "
              "load generator on the other, 8 connections; medians)", "",
              "| operation | " + " | ".join(names) + " | usersvc ÷ ceiling |",
              "|---|" + "---:|" * (len(names) + 1)]
    writer = http.pop("SQLite writer")
    for op, by in http.items():
        ratio = by["usersvc"] / by["waitress, fixed body (ceiling)"]
        lines.append(f"| {op} | " + " | ".join(f"{by[n]:,.0f}" for n in names)
                     + f" | {mark(ratio, TARGETS_HTTP[op], False)} |")
    lines += ["", "### The embedded default: SQLite file beside memory (no access log; every 201 "
              "committed with synchronous=FULL)", "",
              "| operation | memory | SQLite file | SQLite ÷ memory |", "|---|---:|---:|---:|"]
    for op, by in http.items():
        memory, sqlite = by["usersvc, no access log"], by["usersvc on SQLite, no access log"]
        lines.append(f"| {op} | {memory:,.0f} | {sqlite:,.0f} | "
                     f"{mark(sqlite / memory, TARGETS_SQLITE[op], False)} |")
    post8 = http["POST /users"]["usersvc on SQLite, 8 threads"]
    lines += ["", "| SQLite writer under POST | writes a commit | ms a commit | commits a second "
              "| requests per second |", "|---|---:|---:|---:|---:|"]
    for threads, rate in ((4, http["POST /users"]["usersvc on SQLite, no access log"]), (8, post8)):
        figures = [writer.get(f"{threads} threads: {f}", float("nan"))
                   for f in ("writes a commit", "ms a commit", "commits a second")]
        lines.append(f"| {threads} server threads | {figures[0]:.2f} | {figures[1]:.3f} | "
                     f"{figures[2]:,.0f} | {rate:,.0f} |")

    print("scale ...", file=sys.stderr)
    small, large = 1_000, (100_000 if quick else 1_000_000)
    sc = scale.run(small, large, rounds=1 if quick else 3)
    lines += ["",
              f"## Scale: µs per request at {small:,} and {large:,} users (in-process; medians)",
              "", "| store | operation | " + f"{small:,} | {large:,} | ratio |",
              "|---|---|---:|---:|---:|"]
    for kind in ("memory", "SQLite file"):
        for op in ("get", "create", "delete", "page of 100", "page of 100 by name",
                   "search (10 found)"):
            a, b = sc[kind, small][op], sc[kind, large][op]
            lines.append(f"| {kind} | {op} | {a:.1f} | {b:.1f} | {mark(b / a, 1.25, True)} |")
    lines += ["", f"Memory store: {sc['memory bytes per user']:,.0f} bytes per user (tracemalloc). "
              f"SQLite file: {sc['sqlite bytes per user', large]:,.0f} bytes per user "
              f"at {large:,} users.",
              "", f"Took {time.monotonic() - started:.0f} s."]
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out).write_text(text)
    print(f"written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
