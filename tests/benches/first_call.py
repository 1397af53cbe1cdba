#!/usr/bin/env python3
"""The first call of a tool nothing has compiled yet (a fresh machine, a CI runner starting
empty), with tiered compilation and without, for the example tools in Python, JavaScript and C.

    cargo build --release && examples/guests/build.sh && tests/benches/first_call.py

Per tool and mode, REPEATS runs, each with a new, empty compile cache:
  tiered     `toolhost call` as it is: Winch's code answers, Cranelift compiles afterwards (in a
             detached `toolhost compile`, which this script waits for before the next run)
  untiered   `toolhost --no-tiering call`: Cranelift compiles before the call
  warm       the same call again once the cache holds the optimised code (a CI run whose cache
             step restored it)
  compile    how long the background `toolhost compile` took to leave the optimised code
Prints medians and ranges. Env: TOOLHOST (binary, default target/release/toolhost), GUESTS
(default target/guests), REPEATS (default 5).
"""

import glob
import os
import shutil
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("TOOLHOST", os.path.join(ROOT, "target/release/toolhost"))
GUESTS = os.environ.get("GUESTS", os.path.join(ROOT, "target/guests"))
REPEATS = int(os.environ.get("REPEATS", "5"))

TOOLS = [
    ("Python", "dataquery.wasm", "DataQuery", '{"path":"people.csv"}'),
    ("JavaScript", "outline.wasm", "MarkdownOutline", '{"path":"doc.md"}'),
    ("C", "wordcount.wasm", "WordCount", '{"path":"doc.md"}'),
]


def workspace():
    ws = tempfile.mkdtemp(prefix="first-call-")
    with open(os.path.join(ws, "people.csv"), "w") as f:
        f.write("name,age\nann,31\nbob,25\n")
    with open(os.path.join(ws, "doc.md"), "w") as f:
        f.write("# Title\n\nsome words here\n\n## Part\n\nmore words\n")
    return ws


def call(ws, tools, cache, tool, args, extra=()):
    env = dict(os.environ, TOOLHOST_CACHE_DIR=cache, RUST_LOG="warn")
    start = time.perf_counter()
    out = subprocess.run(
        [BIN, *extra, "--no-default-tools", "--tools", tools, "--workspace", ws, "call", tool, args],
        env=env, capture_output=True, text=True,
    )
    ms = (time.perf_counter() - start) * 1000
    if out.returncode != 0:
        raise SystemExit(f"{tool} failed ({out.returncode}): {out.stdout}{out.stderr}")
    return ms


def wait_for_cwasm(cache, timeout=120):
    """Milliseconds until the compile cache holds a .cwasm entry (the background compile)."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if glob.glob(os.path.join(cache, "*.cwasm")) and not glob.glob(os.path.join(cache, ".entry-*")):
            # The entry is renamed into place once written: present means complete. Give the
            # detached process a moment to exit before the next run.
            time.sleep(0.2)
            return (time.perf_counter() - start) * 1000
        time.sleep(0.02)
    raise SystemExit(f"no optimised code in {cache} after {timeout} s")


def summary(xs):
    return f"{statistics.median(xs):8.0f} ms ({min(xs):.0f}-{max(xs):.0f})"


def main():
    for lang, wasm, tool, args in TOOLS:
        src = os.path.join(GUESTS, wasm)
        if not os.path.exists(src):
            print(f"{lang}: {src} missing (examples/guests/build.sh)")
            continue
        tools = tempfile.mkdtemp(prefix="first-call-tools-")
        shutil.copy(src, tools)
        ws = workspace()
        tiered, untiered, warm, background = [], [], [], []
        for _ in range(REPEATS):
            cache = tempfile.mkdtemp(prefix="first-call-cache-")
            shutil.rmtree(cache)
            tiered.append(call(ws, tools, cache, tool, args))
            background.append(wait_for_cwasm(cache))
            warm.append(call(ws, tools, cache, tool, args))
            shutil.rmtree(cache)
            cache = tempfile.mkdtemp(prefix="first-call-cache-")
            shutil.rmtree(cache)
            untiered.append(call(ws, tools, cache, tool, args, extra=["--no-tiering"]))
            shutil.rmtree(cache)
        print(f"{lang:10} {tool}")
        print(f"  tiered first call   {summary(tiered)}")
        print(f"  untiered first call {summary(untiered)}")
        print(f"  background compile  {summary(background)} after the tiered call returned")
        print(f"  warm call           {summary(warm)}")
        shutil.rmtree(tools)
        shutil.rmtree(ws)


if __name__ == "__main__":
    main()
