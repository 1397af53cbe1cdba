#!/usr/bin/env bash
# Build toolhost's container image with podman (or buildah): stage the static binary and the
# empty directories the image needs in target/container/rootfs, then build
# deploy/container/Containerfile FROM scratch (no base image to pull).
#
#   deploy/container/build.sh [--binary PATH] [--tag NAME]
#
# Without --binary, builds the musl binary first (deploy/release/package.sh's build).
set -euo pipefail
cd "$(dirname "$0")/../.."

binary=""
tag="localhost/toolhost:dev"
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary="$2"; shift 2 ;;
        --tag) tag="$2"; shift 2 ;;
        *) echo "usage: deploy/container/build.sh [--binary PATH] [--tag NAME]" >&2; exit 2 ;;
    esac
done
if [ -z "$binary" ]; then
    rustup target add wasm32-wasip2 x86_64-unknown-linux-musl >/dev/null
    cargo build --locked --release --target x86_64-unknown-linux-musl -p toolhost-cli
    binary=target/x86_64-unknown-linux-musl/release/toolhost
fi

context=target/container
rm -rf "$context"
mkdir -p "$context/rootfs/workspace" "$context/rootfs/cache" "$context/rootfs/state" "$context/rootfs/tmp"
chmod 700 "$context/rootfs/state" "$context/rootfs/cache"
cp "$binary" "$context/rootfs/toolhost"
cp deploy/container/Containerfile "$context/Containerfile"
podman build --tag "$tag" --file "$context/Containerfile" "$context"
echo "built $tag"
