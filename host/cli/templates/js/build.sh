#!/usr/bin/env bash
# Build {{name}} into dist/{{name}}.wasm and test it; then: toolhost --tools dist call {{name}} '{"path":"README.md"}'
# Installs the locked build dependencies (componentize-js) with `npm ci` the first time, or
# links $TOOLHOST_NODE_MODULES (an existing node_modules with the same lock) instead.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -d node_modules/@bytecodealliance/componentize-js ]; then
    if [ -n "${TOOLHOST_NODE_MODULES:-}" ]; then
        ln -sfn "$TOOLHOST_NODE_MODULES" node_modules
    else
        npm ci --no-audit --no-fund --loglevel=error
    fi
fi
mkdir -p dist
node build.mjs tool.js wit {{world}} dist/{{name}}.wasm
{{test}}
