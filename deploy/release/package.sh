#!/usr/bin/env bash
# Build toolhost's release binary for TARGET and package it as install.sh expects:
# dist/toolhost-TARGET.tar.gz (holding toolhost-TARGET/toolhost, the README and the licence)
# and a line for it in dist/SHA256SUMS.
#
#   deploy/release/package.sh x86_64-unknown-linux-musl
#
# A Linux target is static (musl: `rustup target add x86_64-unknown-linux-musl` and Debian's
# `musl-tools`), so the binary runs on any Linux with no library to install. The default tools
# are embedded, compiled ahead of time, as in every build.
set -euo pipefail
cd "$(dirname "$0")/../.."

target="${1:?usage: deploy/release/package.sh TARGET (e.g. x86_64-unknown-linux-musl)}"
rustup target add wasm32-wasip2 "$target" >/dev/null
cargo build --locked --release --target "$target" -p toolhost-cli

name="toolhost-$target"
stage="target/dist/$name"
rm -rf "$stage"
mkdir -p "$stage" dist
cp "target/$target/release/toolhost" "$stage/"
# Symbols only make the download larger (71 → 60 MB on x86_64 Linux); panics still name the
# place in the source, from the message.
if command -v strip >/dev/null && [[ "$target" == *linux* ]]; then
    strip "$stage/toolhost" 2>/dev/null || echo "warning: strip failed; the binary keeps its symbols" >&2
fi
cp README.md "$stage/"
[ -f LICENSE ] && cp LICENSE "$stage/"
tar -C target/dist -czf "dist/$name.tar.gz" "$name"

# One line per archive; a rebuild replaces its own line only.
sum="$(cd dist && sha256sum "$name.tar.gz")"
touch dist/SHA256SUMS
grep -v "  $name.tar.gz\$" dist/SHA256SUMS > dist/SHA256SUMS.new || true
echo "$sum" >> dist/SHA256SUMS.new
sort -k2 dist/SHA256SUMS.new > dist/SHA256SUMS
rm dist/SHA256SUMS.new
cp install.sh dist/install.sh
echo "dist/$name.tar.gz ($(du -h "dist/$name.tar.gz" | cut -f1)), dist/SHA256SUMS, dist/install.sh"
