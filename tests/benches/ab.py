#!/usr/bin/env python3
"""Same-run A/B: this tree against an earlier commit, both release builds, measured in turns.

    tests/benches/ab.py BASE [ROUNDS]        # e.g. tests/benches/ab.py ff7fe72 5

A is BASE, B is this working tree (with whatever is not committed). BASE is extracted with
`git archive` into target/ab/SHORT/src and built there into target/ab/SHORT/target; a second
run reuses both (no rebuild). This tree is built into the usual target/ with `cargo build
--release` and `cargo bench --no-run`. Every build and every measurement runs under `nice -n 19`
(the machine is shared). Executables are taken from cargo's JSON messages.

Each round measures every figure for A and for B, one after the other, A first in even rounds
and B first in odd ones (so a drift of the machine during a round weighs on both alike):
  - the MCP figures of one run of this tree's mcp bench (tests/benches/mcp.rs) with
    TOOLHOST_BIN_A and TOOLHOST_BIN_B set: the same client drives both binaries; stdio
    sequential and pipelined, HTTP with sessions and stateless, start → tools/list ready, and a
    control (the bench's reference server on both sides: its ratio is the noise);
  - the pipeline's no-op call (criterion, noop_call/pooling) from each build's own pipeline
    bench, built from that build's tree.
Then a table: the median over rounds for A and B with their spread (min-max over rounds), the
ratio B/A of the medians, and the range of the rounds' own ratios. Raw figures go to
target/ab/SHORT/ab-DATE.json.

Env: CALLS (per MCP figure, default 2000), STARTS (starts per side and round, default 11).
"""

import datetime
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NICE = ["nice", "-n", "19"]
CRITERION_FILTER = "noop_call/pooling"
PIPELINE = f"pipeline: {CRITERION_FILTER} (criterion)"


def git(*args):
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def cargo(args, cwd, target_dir=None):
    """Run cargo under nice with JSON messages; the executables it built, by (kind, name)."""
    env = dict(os.environ)
    if target_dir:
        env["CARGO_TARGET_DIR"] = target_dir
    command = [*NICE, "cargo", *args, "--message-format=json-render-diagnostics"]
    print(f"$ {' '.join(command)}   (in {os.path.relpath(cwd, ROOT) or '.'})", file=sys.stderr)
    out = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.PIPE, text=True)
    found = {}
    for line in out.stdout.splitlines():
        if not line.startswith("{"):
            continue
        message = json.loads(line)
        if message.get("reason") == "compiler-artifact" and message.get("executable"):
            for kind in message["target"]["kind"]:
                found[(kind, message["target"]["name"])] = message["executable"]
    return out.returncode, found


def build(cwd, target_dir, benches):
    """The toolhost binary and the named bench executables of the tree at `cwd`; a bench that
    cannot be built is None, with the reason in `notes`."""
    code, bins = cargo(["build", "--release"], cwd, target_dir)
    if code != 0 or ("bin", "toolhost") not in bins:
        sys.exit(f"cargo build --release failed in {cwd}")
    built = {"toolhost": bins[("bin", "toolhost")], "notes": {}}
    args = ["bench", "--no-run", "-p", "toolhost-tests"]
    for bench in benches:
        args += ["--bench", bench]
    code, found = cargo(args, cwd, target_dir)
    for bench in benches:
        built[bench] = found.get(("bench", bench))
        if built[bench] is None:
            built["notes"][bench] = f"no bench named {bench} built (cargo exit {code})"
    return built


def base_build(base):
    """BASE, extracted and built under target/ab/SHORT, or what an earlier run left there."""
    commit = git("rev-parse", "--verify", f"{base}^{{commit}}")
    short = git("rev-parse", "--short", commit)
    home = os.path.join(ROOT, "target", "ab", short)
    src = os.path.join(home, "src")
    record = os.path.join(home, "built.json")
    if os.path.isfile(record):
        with open(record) as f:
            built = json.load(f)
        if os.path.isfile(built["toolhost"]):
            print(f"A: reusing {os.path.relpath(home, ROOT)} (delete built.json there to rebuild)", file=sys.stderr)
            return short, home, built
    if not os.path.isdir(src):
        archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
        partial = src + ".partial"
        shutil.rmtree(partial, ignore_errors=True)
        os.makedirs(partial)
        tarfile.open(fileobj=io.BytesIO(archive)).extractall(partial, filter="tar")
        os.rename(partial, src)
    built = build(src, os.path.join(home, "target"), ["pipeline"])
    with open(record, "w") as f:
        json.dump(built, f, indent=1)
    return short, home, built


def pipeline(exe, cwd, criterion_home):
    """Criterion's estimate for noop_call/pooling, in µs."""
    env = dict(os.environ, CRITERION_HOME=criterion_home)
    out = subprocess.run(
        [*NICE, exe, "--bench", "--noplot", CRITERION_FILTER], cwd=cwd, env=env, capture_output=True, text=True
    )
    m = re.search(r"time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]", out.stdout)
    if out.returncode != 0 or not m:
        tail = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise ValueError(f"no {CRITERION_FILTER} figure (exit {out.returncode}: {tail})")
    scale = {"ns": 1e-3, "µs": 1.0, "us": 1.0, "ms": 1e3, "s": 1e6}[m.group(2)]
    return float(m.group(1)) * scale


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    rounds = int(sys.argv[2]) if len(sys.argv) == 3 else 5
    short, home, a = base_build(sys.argv[1])
    b = build(ROOT, None, ["pipeline", "mcp"])
    if b["mcp"] is None:
        sys.exit("this tree's mcp bench did not build")
    head = git("rev-parse", "--short", "HEAD")
    # The client and this script are not part of the difference, nor are the notes.
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!tests/benches/mcp.rs", ":!*.md") != ""
    sides = {
        "A": {"name": short, "build": a, "cwd": os.path.join(home, "src")},
        "B": {"name": f"this tree (HEAD {head}{', with uncommitted changes' if dirty else ''})", "build": b, "cwd": ROOT},
    }
    calls = os.environ.get("CALLS", "2000")
    starts = os.environ.get("STARTS", "11")

    figures = {}  # figure -> {"unit", "A": [..], "B": [..], "missing": {side: reason}}

    def record(figure, unit, side, value=None, missing=None):
        f = figures.setdefault(figure, {"unit": unit, "A": [], "B": [], "missing": {}})
        if missing is None:
            f[side].append(value)
        else:
            f["missing"][side] = missing

    for r in range(rounds):
        order = "AB" if r % 2 == 0 else "BA"
        print(f"round {r + 1}/{rounds} ({order[0]} first)", file=sys.stderr)
        env = dict(
            os.environ,
            TOOLHOST_BIN_A=a["toolhost"],
            TOOLHOST_BIN_B=b["toolhost"],
            AB_ORDER=order,
            CALLS=calls,
            STARTS=starts,
            RUST_LOG="warn",
        )
        out = subprocess.run([*NICE, b["mcp"]], cwd=ROOT, env=env, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"the mcp bench failed:\n{out.stdout}\n{out.stderr}")
        for line in out.stdout.splitlines():
            if line.startswith("{"):
                m = json.loads(line)
                record(m["figure"], m["unit"], m["side"], m.get("value"), m.get("missing"))
        for side in order:
            build_ = sides[side]["build"]
            if build_.get("pipeline") is None:
                record(PIPELINE, "µs", side, missing=build_["notes"].get("pipeline", "not built"))
                continue
            try:
                criterion_home = os.path.join(ROOT, "target", "ab", "criterion", side)
                record(PIPELINE, "µs", side, pipeline(build_["pipeline"], sides[side]["cwd"], criterion_home))
            except ValueError as e:
                record(PIPELINE, "µs", side, missing=str(e))

    date = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    with open(os.path.join(home, f"ab-{date.replace(' ', '-').replace(':', '')}.json"), "w") as f:
        json.dump({"date": date, "rounds": rounds, "calls": calls, "starts": starts,
                   "A": sides["A"]["name"], "B": sides["B"]["name"], "figures": figures}, f, indent=1)

    print(f"\nA = {sides['A']['name']}   B = {sides['B']['name']}")
    print(f"{date}, {rounds} rounds (CALLS={calls}, STARTS={starts}); median over rounds [min-max]; "
          "B/A of the medians [the rounds' own ratios, min-max]\n")
    print(f"{'figure':<48} {'A':>24} {'B':>24} {'B/A':>20}")
    for name, f in figures.items():
        cells = []
        for side in "AB":
            xs = f[side]
            if side in f["missing"] or not xs:
                cells.append("missing")
            else:
                cells.append(f"{fmt(statistics.median(xs))} [{fmt(min(xs))}-{fmt(max(xs))}] {f['unit']}")
        if "missing" in cells:
            ratio = "-"
        else:
            ratios = [y / x for x, y in zip(f["A"], f["B"])]
            ratio = (f"{statistics.median(f['B']) / statistics.median(f['A']):.2f}x "
                     f"[{min(ratios):.2f}-{max(ratios):.2f}]")
        print(f"{name:<48} {cells[0]:>24} {cells[1]:>24} {ratio:>20}")
    for name, f in figures.items():
        for side, reason in f["missing"].items():
            print(f"missing: {name}, {side}: {reason.strip().splitlines()[0]}")


def fmt(x):
    return f"{x:.1f}" if x < 1000 else f"{x:,.0f}"


if __name__ == "__main__":
    main()
