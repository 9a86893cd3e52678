#!/usr/bin/env bash
# pnpm chaos [--kills N]: the fault runs, longer than the test suite's: the SIGKILL chaos with N kills
# (default 50; the suite runs 20) with its Redis flush and broker restart, ten Redis losses and a 20 s
# Redis freeze, a broker kill and a 20 s broker freeze, network faults with a 60 s partition. Each prints
# what it did and how long recovery took.
set -euo pipefail
kills=50
while [ $# -gt 0 ]; do
  case "$1" in
    --kills)
      [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "chaos: --kills needs a positive whole number" >&2; exit 2; }
      kills="$2"; shift 2 ;;
    --kills=*)
      kills="${1#--kills=}"
      [[ "$kills" =~ ^[1-9][0-9]*$ ]] || { echo "chaos: --kills needs a positive whole number" >&2; exit 2; }
      shift ;;
    -h|--help)
      sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "chaos: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
bash infra/stack.sh up
export TIDEMARK_CHAOS_KILLS="$kills" TIDEMARK_PARTITION_MS=60000 TIDEMARK_REDIS_LOSSES=10 TIDEMARK_REDIS_FREEZE_MS=20000 TIDEMARK_BROKER_FREEZE_MS=20000
exec npx vitest run --project faults test/e2e/redis-loss.test.ts test/e2e/broker-faults.test.ts test/e2e/chaos.test.ts test/e2e/network-faults.test.ts
