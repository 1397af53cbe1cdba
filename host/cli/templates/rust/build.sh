#!/usr/bin/env bash
# Build {{name}} into dist/{{name}}.wasm and test it; then: toolhost --tools dist call {{name}} '{"path":"README.md"}'
set -euo pipefail
cd "$(dirname "$0")"
rustup target add wasm32-wasip2 >/dev/null 2>&1 || true
cargo build --release --target wasm32-wasip2
target="${CARGO_TARGET_DIR:-target}"
mkdir -p dist
cp "$target/wasm32-wasip2/release/{{crate_file}}.wasm" dist/{{name}}.wasm
echo "built dist/{{name}}.wasm"
{{test}}
