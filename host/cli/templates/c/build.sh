#!/usr/bin/env bash
# Build {{name}} into dist/{{name}}.wasm; then: toolhost --tools dist call {{name}} '{"path":"README.md"}'
# Needs clang with wasi-libc (Debian: apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32)
# and toolhost-guest-build (C bindings + componentizing; from a toolhost checkout:
# `cargo install --path examples/guests/componentize`), or $TOOLHOST_GUEST_BUILD pointing at it.
set -euo pipefail
cd "$(dirname "$0")"
helper="${TOOLHOST_GUEST_BUILD:-toolhost-guest-build}"
mkdir -p build dist
"$helper" c-bindings wit/tool@0.1.0 plugin build
clang --target=wasm32-wasi -mexec-model=reactor -O2 -Wall -Wextra -Wno-unused-parameter \
    -Wl,--strip-all -Ibuild tool.c build/plugin.c build/plugin_component_type.o -o build/{{name}}.core.wasm
"$helper" component build/{{name}}.core.wasm dist/{{name}}.wasm
echo "built dist/{{name}}.wasm"
