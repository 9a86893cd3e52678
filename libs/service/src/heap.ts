import { setFlagsFromString } from 'node:v8';

// How far V8 lets its heap grow past what the last full collection kept. A service holds little between
// batches (its state lives in Redis), but a batch's data outlives a few scavenges (it waits on Redis and
// Kafka) and is promoted; on a machine with gigabytes free V8 then lets the old generation grow to
// several times the live set before it collects. The compactor at 10,000 open sessions: 28 MiB live,
// 213 MiB of heap used at its peak, RSS 334 MiB; with a growth of 25% its peak RSS is 209 MiB and its
// throughput the same (services/compactor/bench/memory.ts). The flag is read at every collection, so
// setting it once the process runs takes effect from the next one.

/** Sets V8's heap growing factor to 1 + percent/100; 0 leaves V8's own (dynamic) factor. */
export function limitHeapGrowth(percent: number): void {
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`);
}
