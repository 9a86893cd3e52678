import type { Kafka } from 'kafkajs';
import type { TopicNames } from '../libs/contract/src/index.js';
import { sleep } from './workload.js';

// Where the pipeline's time goes: per-topic high-water marks and per-group committed offsets, sampled
// every 250 ms while it runs, and when each stage had caught up.

/** Now, in ms since the epoch with sub-ms precision: comparable across the bench's processes. */
export const epoch = () => performance.timeOrigin + performance.now();

const seconds = (ms: number) => (ms / 1000).toFixed(2);

interface StageSample {
  /** ms after the first publish. */
  readonly at: number;
  readonly turns: number;
  readonly materialized: number;
  readonly compacted: number;
  readonly compactions: number;
  readonly validated: number;
  readonly markers: number;
  readonly resumed: number;
}

/** Samples the stages of the deployment under `prefix` (groupsFor in services/cli: `${TOPIC_PREFIX}tidemark-<service>`). */
export async function sampleStages(kafka: Kafka, topics: TopicNames, prefix: string) {
  const admin = kafka.admin();
  const samples: StageSample[] = [];
  let running = true;
  let began = 0;
  const high = async (topic: string) =>
    (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0);
  const committed = async (service: string, topic: string) => {
    const [offsets] = await admin.fetchOffsets({ groupId: `${prefix}tidemark-${service}`, topics: [topic] });
    return (offsets?.partitions ?? []).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
  };
  const sample = async () => {
    const [turns, materialized, compacted, compactions, validated, markers, resumed] = await Promise.all([
      high(topics.turns),
      committed('materializer', topics.turns),
      committed('compactor', topics.turns),
      high(topics.compactions),
      committed('validator', topics.compactions),
      high(topics.markers),
      committed('resume', topics.markers),
    ]);
    // Stamped once every answer is in: a stage is never credited with progress before it was seen.
    samples.push({
      at: epoch() - began,
      turns,
      materialized,
      compacted,
      compactions,
      validated,
      markers,
      resumed,
    });
  };
  // Connected before the clock starts, so the first sample is taken at once.
  await admin.connect();
  let loop: Promise<void> = Promise.resolve();
  const run = async () => {
    while (running) {
      await sample();
      await sleep(250);
    }
    // One more once everything has settled, so the last row holds the final counts.
    await sample();
    await admin.disconnect();
  };
  return {
    samples,
    /** Starts sampling; `at` is the first publish (epoch ms). */
    start: (at: number) => {
      began = at;
      loop = run();
    },
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

/** When each stage had caught up, and (with `timeline`) every sample. */
export function stageLines(samples: readonly StageSample[], total: number, timeline: boolean): string[] {
  const doneAt = (pick: (s: StageSample) => number, want: number) => {
    const sample = samples.find((s) => pick(s) >= want);
    return sample === undefined ? '>end' : `${seconds(sample.at)} s`;
  };
  const last = samples[samples.length - 1];
  const compactions = last?.compactions ?? 0;
  const markers = last?.markers ?? 0;
  const lines = [
    `stages caught up (s after the first publish): turns.l0 written ${doneAt((s) => s.turns, total)}, materializer ${doneAt((s) => s.materialized, total)}, compactor ${doneAt((s) => s.compacted, total)}, validator ${doneAt((s) => s.validated, compactions)}, resume ${doneAt((s) => s.resumed, markers)}`,
  ];
  if (timeline) {
    lines.push(
      '  t (s) | turns.l0 | materializer | compactor | compactions | validator | markers | resume',
      ...samples.map(
        (s) =>
          `  ${seconds(s.at).padStart(5)} | ${String(s.turns).padStart(8)} | ${String(s.materialized).padStart(12)} | ${String(s.compacted).padStart(9)} | ${String(s.compactions).padStart(11)} | ${String(s.validated).padStart(9)} | ${String(s.markers).padStart(7)} | ${String(s.resumed).padStart(6)}`,
      ),
    );
  }
  return lines;
}
