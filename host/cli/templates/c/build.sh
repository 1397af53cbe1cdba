#!/usr/bin/env bash
# Build {{name}} into dist/{{name}}.wasm and test it; then:
#   toolhost --tools dist call {{name}} '{"path":"README.md"}'
# Needs clang with wasi-libc (Debian: apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32)
# and toolhost (for the C bindings and the componentizing: `toolhost guest`), on PATH or in $TOOLHOST.
set -euo pipefail
cd "$(dirname "$0")"
toolhost="${TOOLHOST:-toolhost}"
mkdir -p build dist
"$toolhost" guest c-bindings wit/tool@0.1.0 plugin build
clang --target=wasm32-wasi -mexec-model=reactor -O2 -Wall -Wextra -Wno-unused-parameter \
    -Wl,--strip-all -Ibuild tool.c build/plugin.c build/plugin_component_type.o -o build/{{name}}.core.wasm
"$toolhost" guest component build/{{name}}.core.wasm dist/{{name}}.wasm
echo "built dist/{{name}}.wasm"
{{test}}
