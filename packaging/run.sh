#!/usr/bin/env bash
# Start Splitscope on a fresh machine: system libraries for Qt, a virtual
# environment in .venv with the app, the TensorRT-RTX parser, PDF reports and Netron, then the app
# (on the bundled sample unless a model is given).
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/system-deps.sh
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[app]'
exec .venv/bin/python main.py "$@"
