#!/bin/sh
# The client side of the MCP conformance suite: the harness runs this with the URL of its test
# server as the last argument. toolhost reaches that server as any `[mcp_servers.NAME]` with a
# `url`: `toolhost list` connects (initialize, tools/list), then every tool the server offers
# that the scenarios call is called with `toolhost call`, in bypass mode (no person to ask).
# $TOOLHOST is the binary under test.
set -u
url="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '[mcp_servers.conformance]\nurl = "%s"\n' "$url" > "$dir/toolhost.toml"
export TOOLHOST_STATE_DIR="$dir/state" CLAUDE_CONFIG_DIR="$dir/claude"
cd "$dir" || exit 1
"$TOOLHOST" --no-default-tools list --json > list.json || exit 1
for call in 'add_numbers {"a":2,"b":3}' 'test_reconnection {}' 'test_client_elicitation_defaults {}' 'test-tool {}'; do
    tool=${call%% *}
    input=${call#* }
    if grep -q "\"mcp__conformance__$tool\"" list.json; then
        "$TOOLHOST" --no-default-tools --permission-mode bypass call "mcp__conformance__$tool" "$input" || exit 1
    fi
done
