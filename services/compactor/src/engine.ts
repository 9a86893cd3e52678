import { sessionKey, type DecodedRecord, type EventProducer } from '@tidemark/contract';
import {
  type BoundaryQuery,
  canonicalJson,
  type Compaction,
  compareText,
  createModelSummarizer,
  fetchTransport,
  narrativeSummarizer,
  type Policy,
  policyIdOf,
  sha256Hex,
  strictRepairOf,
  strictSummarizer,
  type Summarizer,
  TidemarkError,
  type TurnEvent,
} from '@tidemark/core';
import { Counter, Gauge, Histogram, type Registry } from '@tidemark/service';
import {
  WindowsLostError,
  type Projection,
  type SessionRef,
  type WindowStore,
  type WindowUpdate,
} from '@tidemark/state';
import type { Logger } from 'pino';
import {
  ingest,
  type Admission,
  type Compacted,
  type CompactionContext,
  type SessionWindow,
  type StateAnswer,
  namedNodes,
  windowOf,
} from './window.js';

// One batch at a time, for the service and for replay alike: turns.l0 batches advance windows and
// publish compactions, each node a lossy summarizer wrote followed by its strict repair. The engine
// holds no session state between batches (it is all in the store), so a batch that throws is simply
// redelivered.

export interface EngineOptions {
  /** The policy of a session (the configured one, or its override). */
  readonly policyFor: (ref: SessionRef) => Policy;
  readonly generation: number;
  readonly compactorVersion: string;
  /** The summarizer a policy names. */
  readonly summarizerFor: (name: string) => Summarizer;
  /**
   * 0: no strict repairs; 1 or more: each node a lossy summarizer wrote is published with its strict
   * repair right after it, which the validator decides only if the node's verdict asks for it (so the
   * compactions topic, and every decision on it, is a function of L0 and the policy, never of when a
   * MarkerInvalid arrived). One repair is all there is: a repair's own would restate its strict claims.
   */
  readonly maxRepairs: number;
  readonly stateWaitMs: number;
  readonly store: WindowStore<SessionWindow>;
  readonly projection: Projection;
  readonly producer: EventProducer;
  readonly metrics: EngineMetrics;
  readonly logger: Logger;
  /** Only sessions this accepts are compacted (replay --tenant/--session); default all. */
  readonly accepts?: (ref: SessionRef) => boolean;
}

/** The state a summary needs was not there in time: the batch is retried (redelivered) later. */
class StateUnavailableError extends TidemarkError<'state_unavailable'> {
  override readonly name: string = 'StateUnavailableError';
  constructor(
    readonly reason: 'timeout' | 'rebuilding',
    readonly session: string,
  ) {
    super(
      'state_unavailable',
      `the materialized state of ${session} is not available (${reason}); the batch will be retried`,
      { retriable: true },
    );
  }
}

export interface BatchOutcome {
  readonly turns: number;
  readonly compactions: number;
}

export class CompactionEngine {
  readonly #o: EngineOptions;
  /** Sessions whose window holds turns (for the window gauge); rebuilt as sessions are seen. */
  readonly #open = new Set<string>();

  constructor(options: EngineOptions) {
    this.#o = options;
  }

  async onTurns(records: readonly DecodedRecord<TurnEvent>[]): Promise<BatchOutcome> {
    const { store, producer, metrics } = this.#o;
    const bySession = new Map<string, DecodedRecord<TurnEvent>[]>();
    for (const record of records) {
      const { tenantId, sessionId } = record.value;
      if (this.#o.accepts !== undefined && !this.#o.accepts({ tenantId, sessionId })) continue;
      const key = sessionKey(tenantId, sessionId);
      const list = bySession.get(key);
      if (list === undefined) bySession.set(key, [record]);
      else list.push(record);
    }
    if (bySession.size === 0) return { turns: 0, compactions: 0 };
    const groups = [...bySession.entries()];
    const loaded = await store.loadWindows(groups.map(([, list]) => list[0]!.value));
    if (!loaded.epoch) throw new WindowsLostError();

    const produced: Compacted[] = [];
    const updates: WindowUpdate<SessionWindow>[] = [];
    const admissions: Record<Admission, number> = { accepted: 0, duplicate: 0, gap: 0, invalid: 0 };
    // Sessions are independent: their summaries (and state reads) overlap; each session's own steps
    // stay in order.
    await Promise.all(
      groups.map(async ([key, list], index) => {
        const start = windowOf(loaded.windows[index] ?? null, list[0]!.value);
        // Filled as turns are admitted: a summary's text is the admitted turn's, never a redelivery's.
        const batchTurns = new Map<number, TurnEvent>();
        const result = await ingest(
          start,
          list.map((r) => ({ turn: r.value, partition: r.raw.partition, offset: r.raw.offset })),
          this.#context(start, batchTurns),
          (turn) => batchTurns.set(turn.seq, turn),
        );
        for (const admission of Object.keys(admissions) as Admission[]) {
          admissions[admission] += result.admissions[admission];
        }
        if (result.stopped === 'timeout' || result.stopped === 'rebuilding') {
          throw new StateUnavailableError(result.stopped, key);
        }
        if (result.stopped === 'broken') {
          // The projection refused a turn this window accepted (they follow the same rules, so this
          // means they disagree): compacting on would claim state the validator cannot verify.
          metrics.stateUnavailable.inc({ reason: 'broken' });
          this.#o.logger.error(
            { session: key },
            'the projection is broken before this window; compaction stops',
          );
        }
        produced.push(...result.produced);
        const kept = new Set(result.window.turns.map((t) => t.seq));
        const named = namedNodes(result.window);
        const before = namedNodes(start);
        updates.push({
          window: result.window,
          loaded: loaded.versions[index]!,
          added: result.accepted.filter((t) => kept.has(t.seq)),
          dropped: start.turns.filter((t) => !kept.has(t.seq)).map((t) => t.seq),
          nodes: {
            added: result.produced
              .filter((c) => named.has(c.node.compactionId))
              .map((c) => [c.node.compactionId, c] as const),
            dropped: [...before].filter((id) => !named.has(id)),
          },
        });
        if (result.window.turns.length > 0) this.#open.add(key);
        else this.#open.delete(key);
      }),
    );

    const published = withRepairs(produced, this.#o.maxRepairs);
    if (published.length > 0) await producer.send('compactions', published);
    await store.commit(updates);

    for (const [admission, count] of Object.entries(admissions)) {
      if (count > 0) metrics.turns.inc({ admission }, count);
    }
    for (const node of published) {
      metrics.compactions.inc({ tier: String(node.tier), kind: node.attempt === 0 ? 'first' : 'repair' });
    }
    metrics.windows.set(this.#open.size);
    return { turns: records.length, compactions: published.length };
  }

  #context(ref: SessionRef, batchTurns: ReadonlyMap<number, TurnEvent>): CompactionContext {
    const { generation, compactorVersion, store, metrics } = this.#o;
    const policy = this.#o.policyFor(ref);
    return {
      policy,
      generation,
      compactorVersion,
      summarizer: this.#o.summarizerFor(policy.summarizer),
      stateAt: (query) => this.#stateAt(query),
      turns: async (tenantId, sessionId, seqs) => {
        const missing = seqs.filter((seq) => !batchTurns.has(seq));
        const stored = await store.loadTurns({ tenantId, sessionId }, missing);
        const bySeq = new Map(stored.map((t) => [t.seq, t]));
        return seqs.map((seq) => batchTurns.get(seq) ?? bySeq.get(seq)!);
      },
      nodes: (tenantId, sessionId, ids) => store.loadNodes<Compacted>({ tenantId, sessionId }, ids),
      observe: (tier, seconds) => metrics.summarizerSeconds.observe({ tier: String(tier) }, seconds),
    };
  }

  /**
   * The span's state from the projection, once the materializer has applied it. Not waitForWatermark:
   * that answers `broken` for a session with a skipped change, whose turns are applied and compacted all
   * the same (the validator, not the compactor, decides what is verifiable).
   */
  async #stateAt(query: BoundaryQuery): Promise<StateAnswer> {
    const { projection, stateWaitMs } = this.#o;
    const deadline = Date.now() + stateWaitMs;
    let pause = 2;
    for (;;) {
      const [watermark, epoch] = await Promise.all([
        projection.watermark(query.tenantId, query.sessionId),
        projection.epoch(),
      ]);
      if (epoch !== null && watermark.appliedSeq >= query.toSeq) {
        // The state's own watermark, read in the same step as it, must cover the span too: Redis may
        // have been lost (and the projection be rebuilding) between the two reads.
        const state = await projection.stateAt(query);
        if (state.appliedSeq >= query.toSeq) return { ok: true, state };
      }
      if (epoch !== null && watermark.broken !== null && watermark.broken.seq <= watermark.appliedSeq + 1) {
        // Stuck behind a refused turn that this window accepted: waiting will not help.
        if (Date.now() >= deadline) return { ok: false, reason: 'broken' };
      }
      if (Date.now() >= deadline) return { ok: false, reason: epoch === null ? 'rebuilding' : 'timeout' };
      await new Promise((resolve) => setTimeout(resolve, pause));
      pause = Math.min(pause * 2, 50);
    }
  }
}

/** The nodes to publish, in order: each node, then (repairs on, a lossy summarizer) its strict repair. */
export function withRepairs(produced: readonly Compacted[], maxRepairs: number): Compaction[] {
  return produced.flatMap(({ node, strict }) =>
    strict === null || maxRepairs < 1 ? [node] : [node, strictRepairOf(node, strict)],
  );
}

/**
 * The store namespace of a generation and its policies (the configured one and any per-session or
 * per-tenant overrides): a new policy or generation starts empty windows, built from the start of L0.
 */
export function namespaceOf(
  generation: number,
  policy: Policy,
  overrides: Readonly<Record<string, Policy>> = {},
): string {
  const keys = Object.keys(overrides).sort(compareText);
  const id =
    keys.length === 0
      ? policyIdOf(policy)
      : sha256Hex(
          canonicalJson({ policy, overrides: keys.map((key) => [key, policyIdOf(overrides[key]!)]) }),
        );
  return `g${generation}:${id.slice(0, 16)}`;
}

export interface EngineMetrics {
  readonly compactions: Counter<'tier' | 'kind'>;
  readonly summarizerSeconds: Histogram<'tier'>;
  readonly windows: Gauge;
  readonly turns: Counter<'admission'>;
  readonly stateUnavailable: Counter<'reason'>;
}

export function engineMetrics(register: Registry): EngineMetrics {
  const registers = [register];
  return {
    compactions: new Counter({
      name: 'tidemark_compactor_compactions_total',
      help: 'Compactions published, by tier and kind (first attempt, or the strict repair published after a lossy one).',
      labelNames: ['tier', 'kind'],
      registers,
    }),
    summarizerSeconds: new Histogram({
      name: 'tidemark_compactor_summarizer_seconds',
      help: 'Time a summarizer took for one node, by tier.',
      labelNames: ['tier'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5, 30],
      registers,
    }),
    windows: new Gauge({
      name: 'tidemark_compactor_windows',
      help: 'Sessions whose window holds uncompacted turns (of those this process has seen).',
      registers,
    }),
    turns: new Counter({
      name: 'tidemark_compactor_turns_total',
      help: 'Turns read, by admission (accepted, duplicate, gap, invalid).',
      labelNames: ['admission'],
      registers,
    }),
    stateUnavailable: new Counter({
      name: 'tidemark_compactor_state_unavailable_total',
      help: 'Compactions that could not read the materialized state in time, by reason.',
      labelNames: ['reason'],
      registers,
    }),
  };
}

/** The summarizers policies name, made once each. */
export function summarizers(model: {
  readonly baseUrl?: string | undefined;
  readonly apiKey?: string | undefined;
}): (name: string) => Summarizer {
  const made = new Map<string, Summarizer>();
  return (name) => {
    let summarizer = made.get(name);
    if (summarizer === undefined) {
      summarizer = summarizerFor(name, model);
      made.set(name, summarizer);
    }
    return summarizer;
  };
}

/** The summarizer a policy names. */
export function summarizerFor(
  name: string,
  model: { readonly baseUrl?: string | undefined; readonly apiKey?: string | undefined } = {},
): Summarizer {
  if (name === 'strict') return strictSummarizer;
  if (name === 'narrative') return narrativeSummarizer;
  if (name.startsWith('model:')) {
    if (model.baseUrl === undefined) throw new Error(`SUMMARIZER=${name} needs MODEL_BASE_URL`);
    return createModelSummarizer(
      { baseUrl: model.baseUrl, model: name.slice('model:'.length), apiKey: model.apiKey ?? null },
      fetchTransport((url, init) => fetch(url, init)),
    );
  }
  throw new Error(`unknown summarizer ${name}: strict, narrative or model:<model>`);
}
