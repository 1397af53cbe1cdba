#!/bin/sh
# Install toolhost's prebuilt binary: download the archive for this machine from a release,
# check it against the release's SHA256SUMS, and put `toolhost` in a directory of your PATH.
#
#   curl -fsSL https://github.com/toolhost/toolhost/releases/latest/download/install.sh | sh
#
# Settings (environment variables):
#   TOOLHOST_VERSION      a release tag (v0.1.0); default: the latest release
#   TOOLHOST_INSTALL_DIR  where to put the binary; default: ~/.local/bin
#   TOOLHOST_DOWNLOAD     where the archives and SHA256SUMS are (a URL or a directory); default:
#                         https://github.com/toolhost/toolhost/releases/download/VERSION (or
#                         .../releases/latest/download)
#
# Nothing is installed unless the archive's sha256 is the one SHA256SUMS lists for it. The
# checksum file comes from the same place as the archive, so it guards against a broken or
# truncated download and a tampered mirror, not against a compromised release: for that, verify
# the release's signature (see the README).
set -eu

repo="https://github.com/toolhost/toolhost"
version="${TOOLHOST_VERSION:-latest}"
install_dir="${TOOLHOST_INSTALL_DIR:-$HOME/.local/bin}"

fail() {
    echo "install.sh: $*" >&2
    exit 1
}

case "$(uname -s)" in
    Linux) os="unknown-linux-musl" ;;
    Darwin) os="apple-darwin" ;;
    *) fail "no prebuilt binary for $(uname -s); build from source: cargo install --locked --git $repo toolhost-cli" ;;
esac
case "$(uname -m)" in
    x86_64 | amd64) arch="x86_64" ;;
    aarch64 | arm64) arch="aarch64" ;;
    *) fail "no prebuilt binary for $(uname -m); build from source: cargo install --locked --git $repo toolhost-cli" ;;
esac
target="$arch-$os"
archive="toolhost-$target.tar.gz"

if [ -n "${TOOLHOST_DOWNLOAD:-}" ]; then
    base="$TOOLHOST_DOWNLOAD"
elif [ "$version" = latest ]; then
    base="$repo/releases/latest/download"
else
    base="$repo/releases/download/$version"
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT INT TERM

fetch() { # fetch NAME: $base/NAME into $tmp/NAME
    case "$base" in
        http://* | https://*)
            if command -v curl >/dev/null; then
                curl --proto '=https,http' -fsSL "$base/$1" -o "$tmp/$1" || fail "cannot download $base/$1"
            elif command -v wget >/dev/null; then
                wget -q "$base/$1" -O "$tmp/$1" || fail "cannot download $base/$1"
            else
                fail "neither curl nor wget is installed"
            fi
            ;;
        *) cp "$base/$1" "$tmp/$1" || fail "cannot read $base/$1" ;;
    esac
}

fetch "$archive"
fetch SHA256SUMS

expected="$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1 }' "$tmp/SHA256SUMS")"
[ -n "$expected" ] || fail "SHA256SUMS lists no $archive"
if command -v sha256sum >/dev/null; then
    actual="$(sha256sum "$tmp/$archive" | awk '{ print $1 }')"
elif command -v shasum >/dev/null; then
    actual="$(shasum -a 256 "$tmp/$archive" | awk '{ print $1 }')"
else
    fail "neither sha256sum nor shasum is installed: cannot check the download"
fi
[ "$actual" = "$expected" ] || fail "$archive has sha256 $actual, but SHA256SUMS says $expected: not installed"

tar -xzf "$tmp/$archive" -C "$tmp"
[ -f "$tmp/toolhost-$target/toolhost" ] || fail "$archive holds no toolhost-$target/toolhost"
mkdir -p "$install_dir"
# Replace atomically: a running toolhost keeps its old file.
cp "$tmp/toolhost-$target/toolhost" "$install_dir/.toolhost.new"
chmod 755 "$install_dir/.toolhost.new"
mv -f "$install_dir/.toolhost.new" "$install_dir/toolhost"

echo "installed $("$install_dir/toolhost" --version) to $install_dir/toolhost"
case ":$PATH:" in
    *":$install_dir:"*) ;;
    *) echo "add $install_dir to your PATH to run it as \`toolhost\`" ;;
esac
