#!/usr/bin/env python3
"""Start-up and per-call cost of the example tools, through the `toolhost` command line.

    examples/guests/build.sh && cargo build --release && examples/guests/bench.py

For each of target/guests/{dataquery,outline,wordcount}.wasm, alone in a tools directory:
  cold load  `toolhost list` with an empty compile cache (Cranelift compiles the component)
  warm load  `toolhost list` again, the compiled code coming from the on-disk cache
  per call   (`toolhost run --jsonl` with N calls - the same with 1 call) / (N - 1), warm
             cache, TOOLHOST_MAX_CONCURRENCY=1 so that calls run one after another: the cost
             of one call (schema check, validate, fresh instance, call, result), not of a batch
  breakdown  from one more N-call run with TOOLHOST_LOG=toolhost=debug (the runtime logs each
             invocation's instantiation and export times): medians of the fresh instance's
             instantiation, of `call` on it, and of `validate` on a reused instance; "rest" is
             per call minus the three (schema check, hooks, permission, result, teardown)
Prints the median of REPEATS runs of each. Env: TOOLHOST (binary, default
target/release/toolhost), REPEATS (default 5), CALLS (default 200).
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("TOOLHOST", os.path.join(ROOT, "target/release/toolhost"))
GUESTS = os.environ.get("TOOLHOST_GUESTS_DIR", os.path.join(ROOT, "target/guests"))
REPEATS = int(os.environ.get("REPEATS", "5"))
CALLS = int(os.environ.get("CALLS", "200"))

TOOLS = [
    ("dataquery.wasm", "Python", "DataQuery", {"path": "people.csv", "where": [{"field": "age", "op": ">", "value": 30}]}),
    ("outline.wasm", "JavaScript", "MarkdownOutline", {"path": "doc.md"}),
    ("wordcount.wasm", "C", "WordCount", {"path": "notes"}),
]


def timed(args, env, stdin=None):
    start = time.perf_counter()
    p = subprocess.run(args, env=env, input=stdin, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return elapsed, p.stdout


def main():
    if not os.path.exists(BIN):
        sys.exit(f"{BIN} is missing: cargo build --release")
    ws = tempfile.mkdtemp()
    with open(os.path.join(ws, "people.csv"), "w") as f:
        f.write("name,age\n" + "".join(f"p{i},{20 + i % 50}\n" for i in range(100)))
    with open(os.path.join(ws, "doc.md"), "w") as f:
        f.write("".join(f"# Part {i}\n\ntext\n\n## Section {i}.1\n\nmore\n\n" for i in range(20)))
    os.mkdir(os.path.join(ws, "notes"))
    for i in range(5):
        with open(os.path.join(ws, "notes", f"n{i}.txt"), "w") as f:
            f.write("the quick brown fox jumps over the lazy dog\n" * 20)

    print(f"{BIN}, {REPEATS} repeats, {CALLS} calls per run (medians)")
    print(
        "| tool | language | .wasm bytes | cold load (compile) | warm load (cache) | per call "
        "| instantiate | `call` (fresh instance) | `validate` (reused) | rest |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for file, lang, name, args in TOOLS:
        src = os.path.join(GUESTS, file)
        if not os.path.exists(src):
            sys.exit(f"{src} is missing: examples/guests/build.sh")
        tools = tempfile.mkdtemp()
        shutil.copy(src, tools)
        base = ["--workspace", ws, "--no-default-tools", "--tools", tools]
        env = dict(os.environ, TOOLHOST_MAX_CONCURRENCY="1")
        cold, warm = [], []
        for _ in range(REPEATS):
            cache = tempfile.mkdtemp()
            env["TOOLHOST_CACHE_DIR"] = cache
            cold.append(timed([BIN, *base, "list"], env)[0])
            warm.append(timed([BIN, *base, "list"], env)[0])
        # The cache of the last repeat stays warm for the calls.
        line = lambda i: json.dumps({"type": "tool_use", "id": f"t{i}", "name": name, "input": args})
        many = "\n".join(line(i) for i in range(CALLS)) + "\n"
        per_call = []
        for _ in range(REPEATS):
            t1, _ = timed([BIN, *base, "run", "--jsonl"], env, line(0) + "\n")
            tn, out = timed([BIN, *base, "run", "--jsonl"], env, many)
            assert out.count('"tool_result"') == CALLS and '"is_error":true' not in out, out[:500]
            per_call.append((tn - t1) / (CALLS - 1))
        inst, call, validate = breakdown(base, env, name, many)
        per = statistics.median(per_call) * 1e6
        size = os.path.getsize(src)
        print(
            f"| {name} | {lang} | {size:,} | {statistics.median(cold) * 1e3:,.0f} ms "
            f"| {statistics.median(warm) * 1e3:,.1f} ms | {per:,.0f} µs "
            f"| {inst:,.0f} µs | {call:,.0f} µs | {validate:,.0f} µs | {per - inst - call - validate:,.0f} µs |"
        )


INVOKED = re.compile(r"invoked (\S+) (\S+) on a (fresh|reused) instance: instantiate (\d+) µs, export (\d+) µs")


def breakdown(base, env, name, many):
    """Medians (µs) of a fresh instance's instantiation, `call` on it, `validate` reused."""
    p = subprocess.run(
        [BIN, *base, "run", "--jsonl"],
        env=dict(env, TOOLHOST_LOG="toolhost=debug", NO_COLOR="1"),
        input=many,
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        sys.exit(f"run with TOOLHOST_LOG=toolhost=debug failed ({p.returncode}):\n{p.stderr[-2000:]}")
    inst, call, validate = [], [], []
    for m in INVOKED.finditer(p.stderr):
        tool, export, kind, i, e = m.groups()
        if tool != name:
            continue
        if export == "call" and kind == "fresh":
            inst.append(int(i))
            call.append(int(e))
        elif export == "validate" and kind == "reused":
            validate.append(int(e))
    if not call or not validate:
        sys.exit(f"no invocation timings in the debug log of {name}:\n{p.stderr[-2000:]}")
    return statistics.median(inst), statistics.median(call), statistics.median(validate)


if __name__ == "__main__":
    main()
