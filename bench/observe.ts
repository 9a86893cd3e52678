import { Journal } from '../services/cli/src/index.js';
import { Bus, sessionKey, topicNames } from '../libs/contract/src/index.js';
import {
  definePolicy,
  foldDecisions,
  runReference,
  trustedMarkers,
  type MarkerDecision,
} from '../libs/core/src/index.js';
import { createLogger } from '../libs/service/src/index.js';
import { epoch, sampleStages, stageLines } from './stages.js';
import { interleavedWorkload, percentile, sleep } from './workload.js';

// The bench's observers of a Tidemark leg, in a process of their own so that their CPU is not counted as
// Tidemark's (bench/tidemark-leg.ts spawns it and reports its CPU apart): the cli Journal (when every
// session holds every compaction and decision its core reference computes), two tails for the
// validation latency (record timestamps), the stage sampler, and the check that each session's trusted
// markers equal the reference's. Over IPC: `ready` once caught up; the parent answers `start` (the epoch
// ms of the first publish); then `settled` (epoch ms) and a `report`.

export interface ObserveRequest {
  readonly brokers: readonly string[];
  readonly registryUrl: string;
  readonly topicPrefix: string;
  readonly tenantId: string;
  readonly sessions: number;
  readonly turns: number;
  readonly seed: number;
  readonly maxRepairs: number;
  readonly timeline: boolean;
}

export interface ObserveReport {
  readonly lines: readonly string[];
  readonly mismatched: number;
  /** Validation latency (compaction record → its first decision record), ms. */
  readonly latency: { readonly p50: number; readonly p99: number };
}

const request = JSON.parse(process.env.BENCH_OBSERVE ?? 'null') as ObserveRequest | null;
const send = process.send?.bind(process);
if (request === null || send === undefined) {
  process.stderr.write('bench/observe.ts: spawned by bench/tidemark-leg.ts only (BENCH_OBSERVE, IPC)\n');
  process.exit(2);
}
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const started = new Promise<number>((resolve) =>
  process.on('message', (message: { type?: string; at?: number }) => {
    if (message.type === 'start') resolve(message.at!);
  }),
);
process.once('disconnect', () => process.exit(0));

const { tenantId } = request;
const policy = definePolicy({});
const workload = interleavedWorkload(request).sessions;
const references = workload.map((turns) =>
  runReference(turns, { policy, generation: 1, maxRepairs: request.maxRepairs }),
);
const topics = topicNames(request.topicPrefix);
const bus = await Bus.connect({
  brokers: [...request.brokers],
  registryUrl: request.registryUrl,
  clientId: `${request.topicPrefix}observer`,
  topics,
  service: 'bench',
  logger: createLogger('bench', 'error'),
});
const journal = await Journal.open(
  bus,
  workload.map((turns) => sessionKey(tenantId, turns[0]!.sessionId)),
);
// The journal keeps no Kafka timestamps: a tail of our own for the latency.
const appended = new Map<string, number>();
/** Each compaction's kind for the latency breakdown: `L<tier>` or `L<tier> repair`. */
const kinds = new Map<string, string>();
const decided = new Map<string, number>();
let lastDecision = 0;
const tails = [
  bus.consumer({
    groupId: `${request.topicPrefix}bench-compactions`,
    role: 'compactions',
    onBatch: (records) => {
      for (const { raw, value } of records)
        if (!appended.has(value.compactionId)) {
          appended.set(value.compactionId, raw.timestamp ?? 0);
          kinds.set(value.compactionId, `L${value.tier}${value.attempt === 0 ? '' : ' repair'}`);
        }
      return Promise.resolve();
    },
  }),
  bus.consumer({
    groupId: `${request.topicPrefix}bench-markers`,
    role: 'markers',
    onBatch: (records) => {
      for (const { raw, value } of records) {
        const at = raw.timestamp ?? 0;
        if (!decided.has(value.compactionId)) decided.set(value.compactionId, at);
        lastDecision = Math.max(lastDecision, at);
      }
      return Promise.resolve();
    },
  }),
];
await Promise.all(tails.map((t) => t.run()));
await journal.caughtUp();
const stages = await sampleStages(bus.kafka, topics, request.topicPrefix);
send({ type: 'ready' });

const firstPublish = await started;
stages.start(firstPublish);
// Settled: every session holds every compaction and every decision its core reference produces.
const pending = new Set(workload.map((_, index) => index));
const deadline = Date.now() + 600_000;
while (pending.size > 0 && Date.now() < deadline) {
  for (const index of pending) {
    const reference = references[index]!;
    const seen = journal.session(tenantId, workload[index]![0]!.sessionId);
    const compactions = new Set(seen.compactions.map((c) => c.compactionId));
    const markers = new Set(seen.decisions.map((d) => d.markerId));
    if (
      reference.compactions.every((c) => compactions.has(c.compactionId)) &&
      reference.decisions.every((d) => markers.has(d.markerId))
    )
      pending.delete(index);
  }
  if (pending.size > 0) await sleep(20);
}
send({ type: 'settled', at: epoch(), pending: pending.size });
await stages.stop();
await Promise.all(tails.map((t) => t.stop()));
await journal.close();

// What a resume trusts must be what the reference trusts (the bench measures a correct pipeline).
const trusted = (decisions: readonly MarkerDecision[]) =>
  trustedMarkers(foldDecisions(decisions))
    .map((d) => d.markerId)
    .sort()
    .join(',');
const mismatched = workload.filter(
  (turns, index) =>
    trusted(journal.session(tenantId, turns[0]!.sessionId).decisions) !==
    trusted(references[index]!.decisions),
).length;
const latencyOf = (ids: readonly string[]) =>
  ids
    .filter((id) => decided.has(id))
    .map((id) => decided.get(id)! - appended.get(id)!)
    .sort((a, b) => a - b);
const latencies = latencyOf([...appended.keys()]);
const slowest = [...appended]
  .filter(([id]) => decided.has(id))
  .sort(([a, at], [b, bt]) => decided.get(b)! - bt - (decided.get(a)! - at))
  .slice(0, 8)
  .map(([id, at]) => `${((at - firstPublish) / 1000).toFixed(2)} (${decided.get(id)! - at} ms)`)
  .join(', ');
const byKind = [...new Set(kinds.values())].sort().map((kind) => {
  const of = latencyOf([...kinds].filter(([, k]) => k === kind).map(([id]) => id));
  return `${kind} n=${of.length} p50 ${percentile(of, 50)} p99 ${percentile(of, 99)}`;
});
const last = stages.samples[stages.samples.length - 1];
const report: ObserveReport = {
  mismatched,
  latency: { p50: percentile(latencies, 50), p99: percentile(latencies, 99) },
  lines: [
    `validation latency (compaction record → first decision record, n=${latencies.length}): p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms, max ${latencies[latencies.length - 1] ?? Number.NaN} ms`,
    `  by kind (ms): ${byKind.join('; ')}; the slowest, s after the first publish: ${slowest}`,
    `last decision appended ${((lastDecision - firstPublish) / 1000).toFixed(2)} s after the first publish; ${references.reduce((n, r) => n + r.compactions.length, 0)} compactions and ${references.reduce((n, r) => n + r.decisions.length, 0)} decisions per the core reference, ${last?.compactions ?? 0} compactions and ${last?.markers ?? 0} decisions on the topics`,
    ...stageLines(stages.samples, request.sessions * request.turns, request.timeline),
    `sessions whose trusted markers differ from the core reference: ${mismatched}`,
  ],
};
send({ type: 'report', report });
await bus.disconnect();
