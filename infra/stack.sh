#!/usr/bin/env bash
# The local stack's commands live in infra/stack.ts (see infra/README.md); this wrapper keeps
# `bash infra/stack.sh up|down|status|…` working for every caller, with the same arguments and exit codes.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
tsx_loader="$root/node_modules/tsx/dist/loader.mjs"
if [[ ! -f "$tsx_loader" ]]; then
  echo "stack: error: $tsx_loader is missing: run 'bash scripts/bootstrap.sh' first (it installs node_modules)" >&2
  exit 1
fi

# The Kafka, registry and Redis processes started by stack.ts outlive it and would inherit every
# descriptor our caller left open (say the write end of a pipe it waits on), holding it forever.
# Node cannot close those for its children, so close them here. 255 is bash's own, close-on-exec.
for fd_path in /proc/$$/fd/*; do
  fd="${fd_path##*/}"
  if ((fd > 2 && fd != 255)); then eval "exec $fd>&-" 2>/dev/null || true; fi
done

# `node --import` rather than the tsx CLI: one process, no IPC channel for the children to inherit.
exec node --import "$tsx_loader" "$root/infra/stack.ts" "$@"
