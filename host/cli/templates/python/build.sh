#!/usr/bin/env bash
# Build {{name}} into dist/{{name}}.wasm and test it; then: toolhost --tools dist call {{name}} '{"path":"README.md"}'
# Uses $COMPONENTIZE_PY if set, else a virtualenv in .venv with the pinned componentize-py.
set -euo pipefail
cd "$(dirname "$0")"
if [ -z "${COMPONENTIZE_PY:-}" ]; then
    if [ ! -x .venv/bin/componentize-py ]; then
        python3 -m venv .venv
        .venv/bin/pip install --quiet -r requirements.txt
    fi
    COMPONENTIZE_PY=.venv/bin/componentize-py
fi
mkdir -p dist
PYTHONDONTWRITEBYTECODE=1 "$COMPONENTIZE_PY" -d wit/tool@0.1.0 -w plugin componentize app -o dist/{{name}}.wasm
{{test}}
