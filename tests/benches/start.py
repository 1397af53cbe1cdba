#!/usr/bin/env python3
"""Start-up of the `toolhost` command line on a fresh machine and on a warm one.

    cargo build --release && tests/benches/start.py

For `toolhost list` and for one `toolhost call` of each embedded tool, on this repository:
  cold   an empty compile cache (a fresh CI runner): nothing on disk but the binary
  warm   the same command again, with what the cold run left in the cache
Prints the median and the range of REPEATS runs (each cold run gets a new, empty cache).
The floor beside them is `toolhost --version` (process start, no runtime). Env: TOOLHOST
(binary, default target/release/toolhost), REPEATS (default 11).
"""

import os
import shutil
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("TOOLHOST", os.path.join(ROOT, "target/release/toolhost"))
REPEATS = int(os.environ.get("REPEATS", "11"))

COMMANDS = [
    ("list", ["list"]),
    ("call Read", ["call", "Read", '{"file_path":"README.md","limit":1}']),
    ("call Write", ["call", "--permission-mode", "bypass", "Write", '{"file_path":"target/start-bench.txt","content":"x"}']),
    ("call Glob", ["call", "Glob", '{"pattern":"wit/*.wit"}']),
    ("call Grep", ["call", "Grep", '{"pattern":"fn execute","path":"host/cli/src/commands/call.rs"}']),
    ("call LS", ["call", "LS", '{"path":"wit"}']),
]


def timed(args, env):
    start = time.perf_counter()
    subprocess.run([BIN, *args], env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def show(label, samples):
    print(f"{label:<24} median {statistics.median(samples):7.1f} ms   range {min(samples):7.1f}-{max(samples):7.1f} ms")


def main():
    env = dict(os.environ)
    show("--version (floor)", [timed(["--version"], env) for _ in range(REPEATS)])
    for label, args in COMMANDS:
        cold, warm = [], []
        for _ in range(REPEATS):
            cache = tempfile.mkdtemp(prefix="toolhost-start-")
            run_env = dict(env, TOOLHOST_CACHE_DIR=os.path.join(cache, "cache"))
            cold.append(timed(args, run_env))
            warm.append(timed(args, run_env))
            shutil.rmtree(cache, ignore_errors=True)
        show(f"{label}, cold", cold)
        show(f"{label}, warm", warm)


if __name__ == "__main__":
    main()
