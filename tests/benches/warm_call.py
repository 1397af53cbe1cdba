#!/usr/bin/env python3
"""The first call of a process whose compile cache already holds the tool's optimised code (a CI
run whose cache step restored the cache), for one or more toolhost binaries, alternated call by
call so that they share the machine's noise. Prints each binary's median and minimum.

    cargo build --release && examples/guests/build.sh
    tests/benches/warm_call.py target/release/toolhost [OTHER_BINARY...]

Env: GUESTS (default target/guests), REPEATS (default 15).
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GUESTS = os.environ.get("GUESTS", os.path.join(ROOT, "target/guests"))
REPEATS = int(os.environ.get("REPEATS", "15"))
TOOLS = [
    ("dataquery.wasm", "DataQuery", '{"path":"people.csv"}'),
    ("outline.wasm", "MarkdownOutline", '{"path":"doc.md"}'),
]


def main():
    bins = sys.argv[1:] or [os.path.join(ROOT, "target/release/toolhost")]
    ws = tempfile.mkdtemp(prefix="warm-call-")
    with open(os.path.join(ws, "people.csv"), "w") as f:
        f.write("name,age\nann,31\nbob,25\n")
    with open(os.path.join(ws, "doc.md"), "w") as f:
        f.write("# Title\n\n## Part\n")
    for wasm, tool, args in TOOLS:
        tools = tempfile.mkdtemp(prefix="warm-tools-")
        shutil.copy(os.path.join(GUESTS, wasm), tools)
        cache = tempfile.mkdtemp(prefix="warm-cache-")

        def call(binary, extra=()):
            env = dict(os.environ, TOOLHOST_CACHE_DIR=cache, RUST_LOG="warn")
            start = time.perf_counter()
            out = subprocess.run(
                [binary, *extra, "--no-default-tools", "--tools", tools, "--workspace", ws, "call", tool, args],
                env=env, capture_output=True, text=True,
            )
            if out.returncode != 0:
                raise SystemExit(f"{tool} failed ({out.returncode}): {out.stdout}{out.stderr}")
            return (time.perf_counter() - start) * 1000

        # Fill the cache with the optimised code, as a finished background compile leaves it.
        call(bins[0], ["--no-tiering"])
        times = {b: [] for b in bins}
        for _ in range(REPEATS):
            for b in bins:
                times[b].append(call(b))
        for b, xs in times.items():
            print(f"{tool:16} {b}: median {statistics.median(xs):6.1f} ms, min {min(xs):6.1f} ms")
        shutil.rmtree(tools)
        shutil.rmtree(cache)
    shutil.rmtree(ws)


if __name__ == "__main__":
    main()
