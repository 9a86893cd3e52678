import { sessionKey, type DecodedRecord, type EventProducer } from '@tidemark/contract';
import {
  type BoundaryQuery,
  canonicalJson,
  type Compaction,
  compareText,
  type Policy,
  policyIdOf,
  sha256Hex,
  strictRepairOf,
  type Summarizer,
  TidemarkError,
  type TurnEvent,
} from '@tidemark/core';
import {
  WindowsLostError,
  type Projection,
  type SessionRef,
  type WindowStore,
  type WindowUpdate,
} from '@tidemark/state';
import type { Logger } from 'pino';
import type { EngineMetrics } from './metrics.js';
import {
  ingest,
  type Admission,
  type Compacted,
  type CompactionContext,
  type Ingested,
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
  /**
   * A session's turns on turns.l0 in a range of its partition (offset order, every record, redeliveries
   * and gaps included): what an expired window is rebuilt from. Absent: windows never expire (replay).
   */
  readonly history?: (ref: SessionRef, range: TurnRange) => Promise<readonly PositionedTurn[]>;
  /** Sessions advanced per step of a batch (default 256; see onTurns). */
  readonly sessionsPerStep?: number;
}

/** Sessions a batch advances at once unless told otherwise (BATCH_SESSIONS). */
export const defaultSessionsPerStep = 256;

/** Offsets of one partition: from `from` (inclusive) to `before` (exclusive). */
export interface TurnRange {
  readonly partition: number;
  readonly from: number;
  readonly before: number;
}

/** A turn as read from turns.l0, with where it was read. */
export interface PositionedTurn {
  readonly turn: TurnEvent;
  readonly partition: number;
  readonly offset: number;
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

/** What one call has made or read of a session, not yet in the store: turns by seq, nodes by id. */
interface AtHand {
  readonly turns: Map<number, TurnEvent>;
  readonly nodes: Map<string, Compacted>;
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

  /**
   * A batch of many sessions (thousands open at once, one turn each) is advanced a few hundred sessions at
   * a time, each step loading, publishing and committing its own: what a step holds dies before the young
   * generation's next collections, instead of being promoted with the whole batch's windows. At 10,000
   * open sessions this took the compactor's peak RSS from 550–630 MiB to 340–360, and its throughput up by
   * a quarter (services/compactor/bench/memory.ts). A batch that fails part way is redelivered whole; the
   * steps already done see their turns again as duplicates.
   */
  async onTurns(records: readonly DecodedRecord<TurnEvent>[]): Promise<BatchOutcome> {
    let compactions = 0;
    for (const step of sessionSteps(records, this.#o.sessionsPerStep ?? defaultSessionsPerStep)) {
      compactions += (await this.#advance(step)).compactions;
    }
    return { turns: records.length, compactions };
  }

  async #advance(records: readonly DecodedRecord<TurnEvent>[]): Promise<BatchOutcome> {
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
        const entries = list.map((r) => ({
          turn: r.value,
          partition: r.raw.partition,
          offset: r.raw.offset,
        }));
        const stored = loaded.windows[index] ?? null;
        // Filled as turns are admitted and nodes made: a summary's text is the admitted turn's, never a
        // redelivery's; a node made earlier in this call is at hand, not in the store.
        const atHand: AtHand = { turns: new Map(), nodes: new Map() };
        const history = stored === null ? await this.#history(list[0]!.value, entries[0]!) : [];
        let start = windowOf(stored, list[0]!.value);
        let restored: Ingested | null = null;
        if (history.length > 0) {
          // The window expired (the session was idle past the retention): rebuilt from the session's
          // turns before this batch, exactly as the batches that read them built it. What that makes
          // was published then; only what this batch adds is published now.
          restored = await ingest(start, history, this.#context(start, atHand), (turn) =>
            atHand.turns.set(turn.seq, turn),
          );
          // As for a batch: state not there yet is retried; a broken projection stops compaction (below).
          if (restored.stopped === 'timeout' || restored.stopped === 'rebuilding') {
            throw new StateUnavailableError(restored.stopped, key);
          }
          for (const made of restored.produced) atHand.nodes.set(made.node.compactionId, made);
          start = restored.window;
          metrics.windowsRestored.inc();
        }
        const result = await ingest(start, entries, this.#context(start, atHand), (turn) =>
          atHand.turns.set(turn.seq, turn),
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
        // A restored window is written whole, over none: the diff is against the empty window.
        const base = restored === null ? start : windowOf(null, start);
        const made = [...(restored?.produced ?? []), ...result.produced];
        const kept = new Set(result.window.turns.map((t) => t.seq));
        const named = namedNodes(result.window);
        const before = namedNodes(base);
        updates.push({
          window: result.window,
          loaded: loaded.versions[index]!,
          added: [...(restored?.accepted ?? []), ...result.accepted].filter((t) => kept.has(t.seq)),
          dropped: base.turns.filter((t) => !kept.has(t.seq)).map((t) => t.seq),
          nodes: {
            added: made
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

  /**
   * The turns a session with no window has on turns.l0 before this batch: none for a new session; for
   * one whose window expired, every turn from its first (where the projection, which never expires,
   * says it is) up to the batch. A turn past seq 1 with no window is how an expired one shows.
   */
  async #history(ref: SessionRef, first: PositionedTurn): Promise<readonly PositionedTurn[]> {
    const { history, projection } = this.#o;
    if (history === undefined) return [];
    const origin = await projection.l0Position(ref.tenantId, ref.sessionId, 1);
    if (origin === null || origin.partition !== first.partition || origin.offset >= first.offset) return [];
    return history(ref, { partition: first.partition, from: origin.offset, before: first.offset });
  }

  #context(ref: SessionRef, atHand: AtHand): CompactionContext {
    const { generation, compactorVersion, store, metrics } = this.#o;
    const policy = this.#o.policyFor(ref);
    return {
      policy,
      generation,
      compactorVersion,
      summarizer: this.#o.summarizerFor(policy.summarizer),
      stateAt: (query) => this.#stateAt(query),
      turns: async (tenantId, sessionId, seqs) => {
        const missing = seqs.filter((seq) => !atHand.turns.has(seq));
        const stored = await store.loadTurns({ tenantId, sessionId }, missing);
        const bySeq = new Map(stored.map((t) => [t.seq, t]));
        return seqs.map((seq) => atHand.turns.get(seq) ?? bySeq.get(seq)!);
      },
      nodes: async (tenantId, sessionId, ids) => {
        const missing = ids.filter((id) => !atHand.nodes.has(id));
        const stored = await store.loadNodes<Compacted>({ tenantId, sessionId }, missing);
        const byId = new Map(stored.map((c) => [c.node.compactionId, c]));
        return ids.map((id) => atHand.nodes.get(id) ?? byId.get(id)!);
      },
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
    // Most boundaries are applied by the time they are compacted: the state, read with the epoch, says
    // so itself (its own watermark covers the span), and no watermark is polled.
    const [first, epoch] = await Promise.all([projection.stateAt(query), projection.epoch()]);
    if (epoch !== null && first.appliedSeq >= query.toSeq) return { ok: true, state: first };
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

/**
 * A batch's records in steps of at most `sessions` sessions each, every session's records in one step,
 * in the order they came (a single step when the batch has no more sessions than that).
 */
export function sessionSteps<R extends { readonly value: SessionRef }>(
  records: readonly R[],
  sessions: number,
): R[][] {
  const stepOf = new Map<string, number>();
  const steps: R[][] = [];
  for (const record of records) {
    const key = sessionKey(record.value.tenantId, record.value.sessionId);
    let step = stepOf.get(key);
    if (step === undefined) {
      step = Math.floor(stepOf.size / sessions);
      stepOf.set(key, step);
    }
    (steps[step] ??= []).push(record);
  }
  return steps;
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
