#!/usr/bin/env bash
# Install the toolchains of the Python, JavaScript and C example tools, each only if missing:
#   C:          clang, lld, wasi-libc (Debian packages; apt-get, with sudo when not root)
#   Python:     componentize-py, pinned in python/requirements.txt, in a virtualenv
#   JavaScript: componentize-js, pinned by js/package-lock.json, installed with `npm ci`
# Python and JavaScript tooling lives under $TOOLHOST_GUESTS_DIR (default: target/guests), so
# the source tree stays clean. Safe to run again: it does nothing when everything is in place.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${TOOLHOST_GUESTS_DIR:-$root/target/guests}"
mkdir -p "$out"

# C: Debian's clang finds wasi-libc's sysroot (/usr/lib/wasm32-wasi) by itself.
if ! command -v clang >/dev/null || ! command -v wasm-ld >/dev/null || [ ! -e /usr/include/wasm32-wasi/stdio.h ] \
    || ! ls /usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    $sudo apt-get install -y --no-install-recommends clang lld wasi-libc libclang-rt-14-dev-wasm32
fi

# Python: a virtualenv per requirements file (re-created when the pins change).
venv="$out/venv"
if [ ! -x "$venv/bin/componentize-py" ] || ! cmp -s "$here/python/requirements.txt" "$venv/requirements.txt"; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/python/requirements.txt"
    cp "$here/python/requirements.txt" "$venv/requirements.txt"
fi

# JavaScript: exactly the locked packages (re-installed when the lock file changes).
node_dir="$out/node"
if [ ! -d "$node_dir/node_modules/@bytecodealliance/componentize-js" ] \
    || ! cmp -s "$here/js/package-lock.json" "$node_dir/package-lock.json"; then
    command -v npm >/dev/null || { echo "error: npm (Node.js >= 20) is needed for the JavaScript example" >&2; exit 1; }
    mkdir -p "$node_dir"
    cp "$here/js/package.json" "$here/js/package-lock.json" "$node_dir/"
    (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
fi
