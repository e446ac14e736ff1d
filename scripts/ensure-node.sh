#!/usr/bin/env bash
# Prints the bin directory of a current Node.js line, installing it first when missing:
#   export PATH="$(bash scripts/ensure-node.sh 24):$PATH"
# The npm registry's `node` package ships Node's official binaries for this platform, so a machine that reaches
# only the registry can still run the supported lines (22 and 24 LTS) beside an older system Node. Idempotent:
# an installed line is only checked (about 0.1 s). Installs under RETRACT_NODE_HOME (default /opt/retract-node).
set -euo pipefail
LINE=${1:?usage: ensure-node.sh 22|24}
HOME_DIR=${RETRACT_NODE_HOME:-/opt/retract-node}/$LINE
BIN=$HOME_DIR/node_modules/node/bin

if ! [ -x "$BIN/node" ] || [ "$("$BIN/node" -p 'process.versions.node.split(".")[0]' 2>/dev/null)" != "$LINE" ]; then
  echo "ensure-node: installing Node $LINE from the npm registry's node package into $HOME_DIR" >&2
  mkdir -p "$HOME_DIR"
  npm install --prefix "$HOME_DIR" --no-save --no-audit --no-fund --loglevel=error "node@$LINE" >&2
fi
[ -x "$BIN/node" ] || { echo "ensure-node: FAILED: no node binary at $BIN" >&2; exit 1; }
echo "ensure-node: $("$BIN/node" -v) at $BIN" >&2
echo "$BIN"
