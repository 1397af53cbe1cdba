#!/usr/bin/env python3
"""Installing a big tool from an OCI registry, and starting it from the lock afterwards.

    examples/guests/build.sh && cargo build --release && tests/benches/install.py

A real registry (Debian's `docker-registry`, as tests/src/registry.rs starts it: a free port of
127.0.0.1, plain HTTP, a temporary storage directory) gets COMPONENT (default
target/guests/dataquery.wasm, the 18.5 MB Python tool) once with `toolhost publish`, as
`oci://127.0.0.1:PORT/bench/dataquery:1`, and once signed as `…:signed`. Then:
  add, empty cache     `toolhost add oci://…:1` in a new workspace with a new, empty
                       TOOLHOST_CACHE_DIR: fetch, digest checks, Cranelift compile, `schema`,
                       store, toolhost.toml and toolhost.lock (COLD_REPEATS runs)
  add, warm cache      the same with the cache an earlier add filled: no compile (the code and
                       the `schema` answer come from the cache) (WARM_REPEATS runs)
  inspect, empty cache `toolhost inspect FILE` with an empty cache: read, compile, `schema`,
                       no network: the compile part of an add, for the breakdown
  publish              the first publish (empty cache: compile to check the tool, then push)
                       and later ones (warm cache: push only)
  start                one `toolhost --no-default-tools call DataQuery '{"path":"data.json",
                       "limit":1}'` with a warm cache, the tool coming from
                         --tools DIR           a tools directory (no config)
                         path + sha256 pin     `[tools.DataQuery] path = …, sha256 = …`
                         locked                `[tools.DataQuery] source = "oci://…:1"` and the
                                               toolhost.lock `add` wrote: store, sha256, no net
                         locked, signed        the same for `…:signed` with `[signatures.signers]`
                       in rounds (START_REPEATS), the order rotated each round, so the variants
                       share the machine's moods. A locked start is compared with the others by
                       the median of the per-round differences and its interquartile range.
Prints the median and the range of wall times and the median CPU time (user + sys of the
process; what a busy machine inflates least). The floor is `toolhost --version`. Env: TOOLHOST
(binary, default target/release/toolhost), COMPONENT, TOOLHOST_TEST_REGISTRY (registry binary,
default `docker-registry` on PATH or /usr/bin), COLD_REPEATS (default 5), WARM_REPEATS
(default 11), START_REPEATS (default 21).
"""

import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("TOOLHOST", os.path.join(ROOT, "target/release/toolhost"))
COMPONENT = os.environ.get("COMPONENT", os.path.join(ROOT, "target/guests/dataquery.wasm"))
COLD_REPEATS = int(os.environ.get("COLD_REPEATS", "5"))
WARM_REPEATS = int(os.environ.get("WARM_REPEATS", "11"))
START_REPEATS = int(os.environ.get("START_REPEATS", "21"))

INPUT = '{"path":"data.json","limit":1}'
DATA = '[{"name":"a","n":1},{"name":"b","n":2},{"name":"c","n":3}]'


def cpu_of_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(args, env, cwd, check=None):
    """Run `toolhost ARGS`; (wall ms, CPU ms). Exits when it fails or `check` is not in stdout."""
    cpu = cpu_of_children()
    start = time.perf_counter()
    p = subprocess.run([BIN, *args], env=env, cwd=cwd, capture_output=True, text=True)
    wall = (time.perf_counter() - start) * 1000
    cpu = (cpu_of_children() - cpu) * 1000
    if p.returncode != 0 or (check and check not in p.stdout):
        sys.exit(f"toolhost {' '.join(args)} (in {cwd}) failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return wall, cpu


def ms(x):
    return f"{x / 1000:.2f} s" if x >= 1000 else f"{x:.1f} ms"


def show(label, samples):
    walls = [w for w, _ in samples]
    cpus = [c for _, c in samples]
    print(
        f"{label:<32} median {ms(statistics.median(walls)):>9}   range {ms(min(walls)):>9} - {ms(max(walls)):>9}"
        f"   cpu {ms(statistics.median(cpus)):>9}   (n={len(samples)})"
    )


def registry_binary():
    if os.environ.get("TOOLHOST_TEST_REGISTRY"):
        return os.environ["TOOLHOST_TEST_REGISTRY"]
    found = shutil.which("docker-registry") or "/usr/bin/docker-registry"
    if not os.path.isfile(found):
        sys.exit("docker-registry is not installed (apt-get install docker-registry)")
    return found


def start_registry(root):
    """A registry on a free loopback port storing under ROOT; (process, `127.0.0.1:PORT`)."""
    storage = os.path.join(root, "storage")
    os.mkdir(storage)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    addr = f"127.0.0.1:{port}"
    config = os.path.join(root, "config.yml")
    with open(config, "w") as f:
        f.write(
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n"
            f"storage:\n  filesystem:\n    rootdirectory: {storage}\n  delete:\n    enabled: true\n"
            f"http:\n  addr: {addr}\n"
        )
    proc = subprocess.Popen(
        [registry_binary(), "serve", config],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, addr
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit(f"docker-registry did not listen on {addr} within 20 s")


def workspace(tmp, name, config=None):
    ws = os.path.join(tmp, name)
    os.mkdir(ws)
    with open(os.path.join(ws, "data.json"), "w") as f:
        f.write(DATA)
    if config is not None:
        with open(os.path.join(ws, "toolhost.toml"), "w") as f:
            f.write(config)
    return ws


def paired(label, a, b, name_a, name_b):
    """`a − b` per round, wall and CPU: median and interquartile range; and the wall median of
    each half of the rounds (how far the figure moves by itself)."""

    def spread(d):
        q = statistics.quantiles(d, n=4) if len(d) >= 2 else [d[0]] * 3
        return f"median {statistics.median(d):+6.1f} ms (IQR {q[0]:+.1f} .. {q[2]:+.1f})"

    wall = [x - y for (x, _), (y, _) in zip(a, b)]
    cpu = [x - y for (_, x), (_, y) in zip(a, b)]
    half = len(wall) // 2
    halves = ""
    if half >= 2:
        halves = f"   halves {statistics.median(wall[:half]):+.1f} / {statistics.median(wall[half:]):+.1f} ms"
    print(f"{label:<32} {name_a + ' − ' + name_b + ':':<20} wall {spread(wall)}   cpu {spread(cpu)}{halves}")


def main():
    if not os.path.exists(BIN):
        sys.exit(f"{BIN} is missing: cargo build --release")
    if not os.path.exists(COMPONENT):
        sys.exit(f"{COMPONENT} is missing: examples/guests/build.sh")
    tmp = tempfile.mkdtemp(prefix="toolhost-install-")
    os.mkdir(os.path.join(tmp, "registry"))
    registry, addr = start_registry(os.path.join(tmp, "registry"))
    try:
        run(tmp, addr)
    finally:
        registry.kill()
        registry.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp, addr):
    base = dict(os.environ)
    base.pop("CI", None)  # CI=true means --locked, which `add` refuses
    tools = os.path.join(tmp, "tools")
    os.mkdir(tools)
    file = os.path.join(tools, os.path.basename(COMPONENT))
    shutil.copy(COMPONENT, file)
    # Every command gets its own TOOLHOST_CACHE_DIR (never the user's), outside every workspace.
    warm = os.path.join(tmp, "warm-cache")
    warm_env = dict(base, TOOLHOST_CACHE_DIR=warm)
    ref = f"oci://{addr}/bench/dataquery"
    print(f"{BIN}; {COMPONENT} ({os.path.getsize(COMPONENT):,} bytes); registry {addr}")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    show("--version (floor)", [timed(["--version"], base, tmp) for _ in range(WARM_REPEATS)])

    # Publish: the first one compiles (describing the tool fills the warm cache), later ones push.
    published = [timed(["publish", file, f"{ref}:1"], warm_env, tmp, "Published")]
    show("publish, empty cache", published)
    show("publish again, warm cache", [timed(["publish", file, f"{ref}:1"], warm_env, tmp, "Published") for _ in range(3)])
    key = os.path.join(tmp, "bench.key")
    p = subprocess.run([BIN, "keygen", key], env=base, capture_output=True, text=True, check=True)
    public = next(line for line in p.stdout.splitlines() if line.startswith("ed25519:"))
    timed(["publish", "--sign", key, file, f"{ref}:signed"], warm_env, tmp, "signed by")

    info = json.loads(subprocess.run([BIN, "inspect", "--json", file], env=warm_env, cwd=tmp, capture_output=True, check=True).stdout)
    name, sha = info["info"]["name"], info["sha256"]

    # add with an empty cache, alternating with `inspect FILE` with an empty cache (compile only).
    cold_add, cold_inspect = [], []
    for i in range(COLD_REPEATS):
        ws = workspace(tmp, f"cold-add-{i}")
        cold_add.append(timed(["add", f"{ref}:1"], dict(base, TOOLHOST_CACHE_DIR=os.path.join(tmp, f"cold-cache-{i}")), ws, "Added"))
        shutil.rmtree(os.path.join(tmp, f"cold-cache-{i}"))
        cache = os.path.join(tmp, f"inspect-cache-{i}")
        cold_inspect.append(timed(["inspect", file], dict(base, TOOLHOST_CACHE_DIR=cache), tmp, name))
        shutil.rmtree(cache)

    # add with a warm cache: one untimed add puts the component in the store too.
    timed(["add", f"{ref}:1"], warm_env, workspace(tmp, "locked"), "Added")
    warm_add = [timed(["add", f"{ref}:1"], warm_env, workspace(tmp, f"warm-add-{i}"), "Added") for i in range(WARM_REPEATS)]

    show("add, empty cache", cold_add)
    show("inspect FILE, empty cache", cold_inspect)
    show("add, warm cache", warm_add)
    compile_wall = statistics.median(w for w, _ in cold_add) - statistics.median(w for w, _ in warm_add)
    compile_cpu = statistics.median(c for _, c in cold_add) - statistics.median(c for _, c in warm_add)
    print(f"{'add: empty − warm (compile)':<32} median {ms(compile_wall):>9}   cpu {ms(compile_cpu):>9}")

    # Starts. The workspaces' caches are all the warm one (outside them).
    signed_ws = workspace(
        tmp, "locked-signed", f'[signatures.signers.bench]\nkey = "{public}"\nsources = ["oci://{addr}/bench/"]\n'
    )
    timed(["add", f"{ref}:signed"], warm_env, signed_ws, "signer:      bench")
    variants = [
        ("--tools DIR", ["--no-default-tools", "--tools", tools], workspace(tmp, "tools-dir")),
        (
            "path + sha256 pin",
            ["--no-default-tools"],
            workspace(tmp, "pinned", f"[tools.{name}]\npath = {json.dumps(file)}\nsha256 = \"{sha}\"\n"),
        ),
        ("locked", ["--no-default-tools"], os.path.join(tmp, "locked")),
        ("locked, signed", ["--no-default-tools"], signed_ws),
    ]
    samples = {label: [] for label, _, _ in variants}
    call = ["call", name, INPUT]
    for label, flags, ws in variants:  # once each, untimed: every file in the page cache
        timed([*flags, *call], warm_env, ws, "matched")
    for r in range(START_REPEATS):
        for k in range(len(variants)):
            label, flags, ws = variants[(r + k) % len(variants)]
            samples[label].append(timed([*flags, *call], warm_env, ws, "matched"))
    for label, _, _ in variants:
        show(f"call, {label}", samples[label])
    paired("per-round difference", samples["locked"], samples["--tools DIR"], "locked", "--tools")
    paired("", samples["locked"], samples["path + sha256 pin"], "locked", "pinned")
    paired("", samples["locked, signed"], samples["locked"], "signed", "locked")
    paired("", samples["path + sha256 pin"], samples["--tools DIR"], "pinned", "--tools")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
