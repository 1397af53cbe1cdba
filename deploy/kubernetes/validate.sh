#!/usr/bin/env bash
# Validate deploy/kubernetes: every manifest against Kubernetes' JSON schemas (strict: unknown
# fields are errors), and the manifests against each other and toolhost's rules (validate.py
# says which). Exits non-zero on any problem.
#
# Needs python3 and PyPI, once: kubernetes-validate ships the schemas, so nothing else is
# fetched and no cluster is needed. The virtualenv is target/k8s-venv; it is made, and the
# pinned requirements installed, only when missing.
#
#   deploy/kubernetes/validate.sh                  Kubernetes 1.30 and 1.37
#   deploy/kubernetes/validate.sh 1.31.0           other versions (1.25 to 1.37)
#   TOOLHOST=target/debug/toolhost deploy/kubernetes/validate.sh
#                                                  also `toolhost config check` the ConfigMap's toolhost.toml
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="$root/target/k8s-venv"

# 1.30: the oldest version these manifests are meant for; 1.37: the newest with schemas.
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(1.30.0 1.37.0)

# A marker written after a successful install, so that a half-made venv is made again.
if [ ! -f "$venv/.installed" ] || [ "$here/requirements.txt" -nt "$venv/.installed" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
    touch "$venv/.installed"
fi

exec "$venv/bin/python" "$here/validate.py" "${versions[@]}"
