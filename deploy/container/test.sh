#!/usr/bin/env bash
# Run the image built by deploy/container/build.sh and check that it serves: /healthz, /readyz,
# and a tool call from the official Python MCP SDK through a published port, with the root file
# system read-only and a workspace volume.
#
#   deploy/container/test.sh [IMAGE]        (default localhost/toolhost:dev)
#
# Needs podman, and the MCP SDK venv that .ci/run makes (target/mcp-venv). On a machine where
# podman's defaults cannot run (cgroups v1 hybrid mode, setrlimit not permitted), set
# TOOLHOST_PODMAN_COMPAT=1: runc, cgroupfs and no default ulimits.
set -euo pipefail
cd "$(dirname "$0")/../.."

image="${1:-localhost/toolhost:dev}"
python="${TOOLHOST_MCP_PYTHON:-target/mcp-venv/bin/python}"
podman=(podman)
if [ "${TOOLHOST_PODMAN_COMPAT:-}" = 1 ]; then
    conf="$(mktemp)"
    printf '[containers]\ndefault_ulimits = []\n' > "$conf"
    export CONTAINERS_CONF="$conf"
    podman=(podman --runtime runc --cgroup-manager=cgroupfs)
fi

work="$(mktemp -d)"
echo "hello from the workspace" > "$work/hello.txt"
chmod 755 "$work"
chmod 644 "$work/hello.txt"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
token="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
name="toolhost-test-$$"
cleanup() { "${podman[@]}" rm -f "$name" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

"${podman[@]}" run -d --name "$name" --read-only -p "127.0.0.1:$port:8765" \
    -e TOOLHOST_MCP_TOKEN="$token" -v "$work:/workspace:ro" \
    "$image" >/dev/null

for _ in $(seq 1 200); do
    curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    sleep 0.05
done
curl -fsS "http://127.0.0.1:$port/healthz"
curl -fsS "http://127.0.0.1:$port/readyz"
out="$("$python" deploy/container/call.py "http://127.0.0.1:$port/mcp" "$token" Read '{"file_path":"hello.txt"}')"
echo "$out"
grep -q "hello from the workspace" <<<"$out" || { echo "the Read call did not return the file" >&2; exit 1; }
"${podman[@]}" logs "$name" 2>&1 | tail -3
echo "container test passed"
