import { randomUUID } from 'node:crypto';
import {
  validateChange,
  compareText,
  sessionKey,
  TidemarkCoreError,
  validateTurn,
  type ApplyResult,
  type ArtifactFact,
  type BoundaryQuery,
  type ChangeRejection,
  type ChangeRejectionReason,
  type DeadLetterReason,
  type DispositionFact,
  type ItemEnd,
  type ItemFact,
  type StateAtBoundary,
  type StateChange,
  type TurnEvent,
} from '@tidemark/core';
import type { ChainableCommander, Redis, Result } from 'ioredis';
import { StateError } from './errors.js';
import {
  epochKey,
  lookupBounds,
  lookupMember,
  lookupMemberFact,
  luaScript,
  memberFact,
  rebuildingKey,
  sessionKeyPattern,
  sessionKeys,
  spanMember,
  type SessionKeys,
} from './keys.js';

// The L0 projection: each session's turns folded into Redis by the materializer, read by the validator
// (stateAt, waitForWatermark) and the resume worker (l0Position). It follows core's SessionFold rule for
// rule, and answers stateAt exactly as SessionFold.stateAt does; the integration tests compare the two.
//
// Writes are one Lua script call per session and batch (projection-apply-turns.lua), each turn in it one
// atomic step, all pipelined: one round trip per batch.
// Reads are one script (stateAt) or one pipeline (watermark, wait). Nothing here cannot be rebuilt from
// L0: the epoch key says whether the projection is still the one built from it (Redis keeps nothing on
// disk and may be flushed), and a rebuild starts over under a new epoch.

declare module 'ioredis' {
  interface RedisCommander<Context> {
    tidemarkProjectionApply(...args: (string | number)[]): Result<unknown[], Context>;
    tidemarkProjectionStateAt(...args: (string | number)[]): Result<unknown[], Context>;
    tidemarkProjectionWatermark(...args: string[]): Result<unknown[], Context>;
    tidemarkProjectionMarkBroken(...args: (string | number)[]): Result<number, Context>;
  }
}

/** Turns per apply script call: bounds how long one call holds Redis (about 15 µs a turn). */
const maxTurnsPerCall = 256;

const scripts = {
  apply: luaScript('projection-apply-turns'),
  stateAt: luaScript('projection-state-at'),
  watermark: luaScript('projection-watermark'),
  markBroken: luaScript('projection-mark-broken'),
};

/** A turn as read from turns.l0: the event and where it lives. */
export interface PositionedTurn {
  readonly turn: TurnEvent;
  readonly partition: number;
  readonly offset: number;
}

/** What applying one turn did: core's ApplyResult, for the turn at its turns.l0 position. */
export interface ApplyOutcome extends PositionedTurn {
  /** Exactly what core's SessionFold.apply answers for the turn. */
  readonly result: ApplyResult;
  /**
   * The turn's skipped changes: those of `result` when it was applied now, and for a redelivery those of
   * its first apply (the fold reports none then), so that a crash between applying and dead-lettering
   * loses no dead letter. Empty for a refused turn.
   */
  readonly skipped: readonly ChangeRejection[];
}

/** A batch applied under an epoch: its outcomes, or the news that the projection is no longer that epoch's. */
export type EpochApply =
  | { readonly ok: true; readonly outcomes: readonly ApplyOutcome[] }
  | {
      readonly ok: false;
      /** The projection was lost (flushed) or rebuilt under another epoch: the outcomes cannot be trusted. */
      readonly reason: 'epoch_changed';
      readonly epoch: string | null;
    };

/** Where a turn lives in turns.l0. */
export interface L0Position {
  readonly partition: number;
  readonly offset: number;
}

/** The session's first refused turn or skipped change: boundaries at or past it are not verifiable. */
export interface BrokenMark {
  readonly seq: number;
  readonly reason: DeadLetterReason;
}

export interface Watermark {
  /** Every turn up to this seq, and none after, is applied (0 before the first). */
  readonly appliedSeq: number;
  readonly broken: BrokenMark | null;
  /** The turns.l0 position of the turn at appliedSeq; null before the first turn. */
  readonly offsets: L0Position | null;
}

export type WaitOutcome =
  | { readonly ok: true }
  | {
      readonly ok: false;
      /**
       * timeout: not applied that far within the bound. broken: the session is broken at or before the
       * seq (or the watermark is stuck behind a gap). rebuilding: the projection is lost or being rebuilt
       * and has not reached the seq within the bound.
       */
      readonly reason: 'timeout' | 'broken' | 'rebuilding';
    };

/** A rebuild under way: its epoch, why, and since when (epoch milliseconds). */
export interface RebuildMark {
  readonly epoch: string | null;
  readonly reason: string;
  readonly since: number;
}

export interface ProjectionOptions {
  /** Prepended to every key (default `tidemark:`, the services' REDIS_PREFIX default). */
  readonly prefix?: string;
  /** waitForWatermark polls between these intervals, backing off (default 2 → 25 ms). */
  readonly pollMinMs?: number;
  readonly pollMaxMs?: number;
}

export class Projection {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #pollMinMs: number;
  readonly #pollMaxMs: number;

  constructor(redis: Redis, options: ProjectionOptions = {}) {
    this.#redis = redis;
    this.#prefix = options.prefix ?? 'tidemark:';
    this.#pollMinMs = options.pollMinMs ?? 2;
    this.#pollMaxMs = options.pollMaxMs ?? 25;
    // defineCommand keeps one script per name and connection; loading it again is harmless.
    redis.defineCommand('tidemarkProjectionApply', { numberOfKeys: 13, lua: scripts.apply });
    redis.defineCommand('tidemarkProjectionStateAt', { numberOfKeys: 10, lua: scripts.stateAt });
    redis.defineCommand('tidemarkProjectionWatermark', { numberOfKeys: 2, lua: scripts.watermark });
    redis.defineCommand('tidemarkProjectionMarkBroken', { numberOfKeys: 1, lua: scripts.markBroken });
  }

  get prefix(): string {
    return this.#prefix;
  }

  /**
   * Applies turns in order (each turn one atomic step), in one round trip. Sets the epoch if there is
   * none (the first apply). For tests and single writers: the materializer uses applyBatchInEpoch, which
   * notices a projection lost in between instead of starting a new one over it.
   */
  async applyBatch(turns: readonly PositionedTurn[]): Promise<ApplyOutcome[]> {
    const pipeline = this.#redis.pipeline();
    pipeline.set(epochKey(this.#prefix), newEpoch(), 'NX');
    const finish = this.#queueApply(pipeline, turns);
    const replies = unwrap(await pipeline.exec());
    return finish(replies.slice(1));
  }

  /**
   * Applies turns as applyBatch does, but only trusts the result if the projection is still of `epoch`
   * after the last script ran (checked in the same round trip). A flush before or during the batch shows
   * as `epoch_changed`; the caller rebuilds and must not act on the outcomes (a refusal there may be an
   * artefact of the lost state).
   */
  async applyBatchInEpoch(epoch: string, turns: readonly PositionedTurn[]): Promise<EpochApply> {
    const pipeline = this.#redis.pipeline();
    const finish = this.#queueApply(pipeline, turns);
    pipeline.get(epochKey(this.#prefix));
    const replies = unwrap(await pipeline.exec());
    const current = replies[replies.length - 1] as string | null;
    if (current !== epoch) return { ok: false, reason: 'epoch_changed', epoch: current };
    return { ok: true, outcomes: finish(replies.slice(0, -1)) };
  }

  /**
   * Queues one command per session (its turns of the batch, in order; sessions are independent) and one
   * per turn refused before Redis that can still mark its session; returns how to read their replies
   * (in the same order) into outcomes, in the turns' order.
   */
  #queueApply(
    pipeline: ChainableCommander,
    turns: readonly PositionedTurn[],
  ): (replies: readonly unknown[]) => ApplyOutcome[] {
    const plans = turns.map((positioned) => planTurn(positioned));
    type Call = { order: number; keys: SessionKeys; args: string[]; count: number };
    /** The open call of each session, and every call in pipeline order. */
    const sessions = new Map<string, Call>();
    const calls: Call[] = [];
    /** Per plan, where its reply is: its session's order and its index in that session's reply. */
    const slots: ({ order: number; index: number } | null)[] = [];
    let marks = 0;
    for (const plan of plans) {
      const { turn, partition, offset } = plan.positioned;
      if (plan.kind === 'refused') {
        if (plan.markAt !== null) {
          const keys = sessionKeys(this.#prefix, turn.tenantId, turn.sessionId);
          void pipeline.tidemarkProjectionMarkBroken(keys.meta, plan.markAt, plan.result.reason);
          marks++;
        }
        slots.push(null);
        continue;
      }
      const id = sessionKey(turn.tenantId, turn.sessionId);
      let session = sessions.get(id);
      // A session's turns beyond a bound go to a further call (queued after it, so still in order): one
      // script holds Redis for as long as it runs, and readers wait behind it.
      if (session === undefined || session.count >= maxTurnsPerCall) {
        const keys = session?.keys ?? sessionKeys(this.#prefix, turn.tenantId, turn.sessionId);
        session = { order: calls.length, keys, args: [], count: 0 };
        sessions.set(id, session);
        calls.push(session);
      }
      session.args.push(String(turn.seq), turn.turnId, `${partition}:${offset}`, String(plan.args.length));
      for (const arg of plan.args) session.args.push(arg);
      slots.push({ order: session.order, index: session.count++ });
    }
    // The sessions' commands follow the marks, in the order the sessions first appear.
    for (const { keys, args } of calls) {
      void pipeline.tidemarkProjectionApply(...applyKeys(keys), ...args);
    }
    return (replies) =>
      plans.map((plan, i) => {
        const { turn, partition, offset } = plan.positioned;
        if (plan.kind === 'refused') return { turn, partition, offset, result: plan.result, skipped: [] };
        const slot = slots[i]!;
        const reply = (replies[marks + slot.order] as unknown[][])[slot.index]!;
        return { turn, partition, offset, ...readApplyReply(turn, reply, plan.stateless) };
      });
  }

  /** The state at the query's boundary, exactly as core's SessionFold.stateAt answers it; one round trip. */
  async stateAt(query: BoundaryQuery): Promise<StateAtBoundary> {
    const { fromSeq, toSeq } = query;
    if (!Number.isSafeInteger(fromSeq) || !Number.isSafeInteger(toSeq) || fromSeq < 1 || toSeq < fromSeq) {
      throw new TidemarkCoreError('invalid_input', `not a span: ${fromSeq}..${toSeq}`);
    }
    const keys = sessionKeys(this.#prefix, query.tenantId, query.sessionId);
    const args: (string | number)[] = [
      keys.meta,
      keys.items,
      keys.ends,
      keys.open,
      keys.ended,
      keys.closed,
      keys.disp,
      keys.dispkey,
      keys.art,
      keys.artkey,
      fromSeq,
      toSeq,
      query.itemIds.length,
      ...query.itemIds,
      query.itemKeys.length,
      ...query.itemKeys.flatMap((key) => lookupBounds(key, toSeq)),
      query.paths.length,
      ...query.paths.flatMap((path) => lookupBounds(path, toSeq)),
    ];
    const reply = await this.#redis.tidemarkProjectionStateAt(...args);
    const [
      applied,
      openIds,
      openItems,
      openEnds,
      closedIds,
      closedItems,
      closedEnds,
      dispMembers,
      artMembers,
      lookupItems,
      lookupEnds,
      lookupDisp,
      lookupArt,
    ] = reply as [
      number,
      string[],
      Nullable[],
      Nullable[],
      string[],
      Nullable[],
      Nullable[],
      string[],
      string[],
      Nullable[],
      Nullable[],
      Nullable[],
      Nullable[],
    ];

    const open: ItemFact[] = [];
    openIds.forEach((_, i) => {
      const fact = itemAsOf(openItems[i] ?? null, openEnds[i] ?? null, toSeq);
      if (fact !== null && fact.end === null) open.push(fact);
    });
    const closed: ItemFact[] = [];
    closedIds.forEach((_, i) => {
      const fact = itemAsOf(closedItems[i] ?? null, closedEnds[i] ?? null, toSeq);
      if (fact !== null) closed.push(fact);
    });
    // Members come in (seq, index) order: the last one per key is the latest inside the span.
    const disposed = new Map<string, DispositionFact>();
    for (const member of dispMembers) {
      const fact = JSON.parse(memberFact(member)) as DispositionFact;
      disposed.set(fact.itemKey, fact);
    }
    const artifacts = new Map<string, ArtifactFact>();
    for (const member of artMembers) {
      const fact = JSON.parse(memberFact(member)) as ArtifactFact;
      artifacts.set(fact.path, fact);
    }

    const items = new Map<string, ItemFact>();
    query.itemIds.forEach((id, i) => {
      const fact = itemAsOf(lookupItems[i] ?? null, lookupEnds[i] ?? null, toSeq);
      if (fact !== null) items.set(id, fact);
    });
    const dispositions = new Map<string, DispositionFact>();
    query.itemKeys.forEach((key, i) => {
      const member = lookupDisp[i];
      if (member !== null && member !== undefined) {
        dispositions.set(key, JSON.parse(lookupMemberFact(member)) as DispositionFact);
      }
    });
    const artifactLookup = new Map<string, ArtifactFact>();
    query.paths.forEach((path, i) => {
      const member = lookupArt[i];
      if (member !== null && member !== undefined) {
        artifactLookup.set(path, JSON.parse(lookupMemberFact(member)) as ArtifactFact);
      }
    });

    return {
      tenantId: query.tenantId,
      sessionId: query.sessionId,
      fromSeq,
      toSeq,
      appliedSeq: applied,
      open: open.sort((a, b) => compareText(a.itemId, b.itemId)),
      closed: closed.sort((a, b) => compareText(a.itemId, b.itemId)),
      disposed: [...disposed.values()].sort((a, b) => compareText(a.itemKey, b.itemKey)),
      artifacts: [...artifacts.values()].sort((a, b) => compareText(a.path, b.path)),
      lookup: { items, dispositions, artifacts: artifactLookup },
    };
  }

  async watermark(tenantId: string, sessionId: string): Promise<Watermark> {
    const keys = sessionKeys(this.#prefix, tenantId, sessionId);
    return readWatermark(await this.#redis.tidemarkProjectionWatermark(keys.meta, keys.pos));
  }

  /**
   * Waits, polling with backoff up to `timeoutMs`, until the session is applied up to `seq`. Answers at
   * once when the session is broken at or before `seq` (or stuck behind a gap before it). While the
   * projection is lost or rebuilding it keeps waiting, and answers `rebuilding` at the bound: never ok on
   * missing state.
   */
  async waitForWatermark(
    tenantId: string,
    sessionId: string,
    seq: number,
    timeoutMs: number,
  ): Promise<WaitOutcome> {
    const deadline = Date.now() + timeoutMs;
    let pause = this.#pollMinMs;
    for (;;) {
      const pipeline = this.#redis.pipeline();
      const keys = sessionKeys(this.#prefix, tenantId, sessionId);
      void pipeline.tidemarkProjectionWatermark(keys.meta, keys.pos);
      pipeline.get(epochKey(this.#prefix));
      pipeline.exists(rebuildingKey(this.#prefix));
      const [raw, epoch, rebuilding] = unwrap(await pipeline.exec()) as [unknown[], string | null, number];
      const watermark = readWatermark(raw);
      const lost = epoch === null;
      if (!lost) {
        const { broken, appliedSeq } = watermark;
        if (broken !== null && (seq >= broken.seq || appliedSeq < seq))
          return { ok: false, reason: 'broken' };
        if (appliedSeq >= seq) return { ok: true };
      }
      const left = deadline - Date.now();
      if (left <= 0) return { ok: false, reason: lost || rebuilding === 1 ? 'rebuilding' : 'timeout' };
      await sleep(Math.min(pause, left));
      pause = Math.min(pause * 2, this.#pollMaxMs);
    }
  }

  /** Where the session's turn at `seq` lives in turns.l0, if it was applied. */
  async l0Position(tenantId: string, sessionId: string, seq: number): Promise<L0Position | null> {
    const keys = sessionKeys(this.#prefix, tenantId, sessionId);
    return parsePosition(await this.#redis.hget(keys.pos, String(seq)));
  }

  /** The projection's epoch; null when it was lost (Redis flushed) or never built: rebuild from L0. */
  async epoch(): Promise<string | null> {
    return this.#redis.get(epochKey(this.#prefix));
  }

  /** The rebuild under way, or null. */
  async rebuilding(): Promise<RebuildMark | null> {
    const raw = await this.#redis.get(rebuildingKey(this.#prefix));
    return raw === null ? null : (JSON.parse(raw) as RebuildMark);
  }

  /**
   * Starts a rebuild: marks it (readers wait or answer `rebuilding`), removes every session of the
   * projection, and sets a new epoch, which it returns. The caller then replays L0 from the beginning with
   * applyBatchInEpoch and calls finishRebuild.
   */
  async beginRebuild(reason: string): Promise<string> {
    const epoch = newEpoch();
    const mark: RebuildMark = { epoch, reason, since: Date.now() };
    await this.#redis.set(rebuildingKey(this.#prefix), JSON.stringify(mark));
    // Drop the epoch first: a writer still on the old one stops trusting its batches from here on.
    await this.#redis.del(epochKey(this.#prefix));
    await this.clear();
    await this.#redis.set(epochKey(this.#prefix), epoch);
    return epoch;
  }

  /** Ends the rebuild of `epoch`; false (and nothing done) if the projection has moved to another epoch. */
  async finishRebuild(epoch: string): Promise<boolean> {
    const pipeline = this.#redis.pipeline();
    pipeline.get(epochKey(this.#prefix));
    pipeline.get(rebuildingKey(this.#prefix));
    const [current, raw] = unwrap(await pipeline.exec()) as [string | null, string | null];
    if (current !== epoch) return false;
    if (raw !== null && (JSON.parse(raw) as RebuildMark).epoch === epoch) {
      await this.#redis.del(rebuildingKey(this.#prefix));
    }
    return true;
  }

  /**
   * Declares the projection lost (the `rebuild` command): drops the epoch and marks a rebuild as asked
   * for. A running materializer notices and rebuilds; readers wait or answer `rebuilding` meanwhile.
   */
  async invalidate(reason: string): Promise<void> {
    const mark: RebuildMark = { epoch: null, reason, since: Date.now() };
    const pipeline = this.#redis.pipeline();
    pipeline.set(rebuildingKey(this.#prefix), JSON.stringify(mark));
    pipeline.del(epochKey(this.#prefix));
    unwrap(await pipeline.exec());
  }

  /** Removes every session key of the projection (not the epoch, nor other stores under the prefix). */
  async clear(): Promise<number> {
    let removed = 0;
    let cursor = '0';
    do {
      const [next, keys] = await this.#redis.scan(
        cursor,
        'MATCH',
        sessionKeyPattern(this.#prefix),
        'COUNT',
        1000,
      );
      cursor = next;
      if (keys.length > 0) removed += await this.#redis.unlink(...keys);
    } while (cursor !== '0');
    return removed;
  }

  /**
   * Marks a session broken at `seq` (the earliest mark is kept) for a turn refused before the projection
   * saw it; applyBatch marks its own refusals.
   */
  async markBroken(
    tenantId: string,
    sessionId: string,
    seq: number,
    reason: DeadLetterReason,
  ): Promise<void> {
    const keys = sessionKeys(this.#prefix, tenantId, sessionId);
    await this.#redis.tidemarkProjectionMarkBroken(
      keys.meta,
      Number.isSafeInteger(seq) && seq > 0 ? seq : 0,
      reason,
    );
  }
}

// --- planning a turn: the stateless checks (core's, in core's order) and the script's arguments -------

type TurnPlan =
  | {
      readonly kind: 'refused';
      readonly positioned: PositionedTurn;
      readonly result: Extract<ApplyResult, { ok: false }>;
      /** The seq to mark the session broken at (0: after its watermark); null when it has no usable ids. */
      readonly markAt: number | null;
    }
  | {
      readonly kind: 'script';
      readonly positioned: PositionedTurn;
      readonly args: readonly string[];
      /** Messages of the changes refused by the stateless checks, by index. */
      readonly stateless: ReadonlyMap<number, string>;
    };

function planTurn(positioned: PositionedTurn): TurnPlan {
  const { turn } = positioned;
  const shape = validateTurn(turn);
  if (!shape.ok) {
    const ids = nonEmpty(turn.tenantId) && nonEmpty(turn.sessionId);
    const seqUsable = Number.isSafeInteger(turn.seq) && turn.seq >= 1;
    return {
      kind: 'refused',
      positioned,
      result: { ok: false, seq: turn.seq, reason: shape.reason, message: shape.message },
      markAt: ids ? (seqUsable ? turn.seq : 0) : null,
    };
  }
  const args: string[] = [];
  const stateless = new Map<number, string>();
  turn.changes.forEach((change, index) => {
    const problem = validateChange(change);
    if (problem !== null) {
      stateless.set(index, problem.message);
      args.push('R', String(index), problem.reason, '', '', '');
      return;
    }
    args.push(...changeArgs(change, index, turn.seq));
  });
  return { kind: 'script', positioned, args, stateless };
}

/** The script's six fields for one (statelessly valid) change. */
function changeArgs(change: StateChange, index: number, seq: number): string[] {
  const i = String(index);
  switch (change.type) {
    case 'item_opened': {
      const item: Omit<ItemFact, 'end'> = {
        itemId: change.itemId,
        kind: change.kind,
        name: change.name,
        detail: change.detail,
        handle: change.handle,
        logPath: change.logPath,
        openedSeq: seq,
      };
      return ['O', i, change.itemId, JSON.stringify(item), '', ''];
    }
    case 'item_closed': {
      const end: ItemEnd = { type: 'closed', outcome: change.outcome, detail: change.detail, seq };
      return ['C', i, change.itemId, JSON.stringify(end), '', ''];
    }
    case 'item_disposed': {
      const fact: DispositionFact = {
        itemKey: change.itemKey,
        disposition: change.disposition,
        reason: change.reason,
        supersededBy: change.supersededBy,
        seq,
      };
      const end: ItemEnd = { type: 'disposed', disposition: change.disposition, seq };
      const json = JSON.stringify(fact);
      return [
        'D',
        i,
        change.itemKey,
        JSON.stringify(end),
        spanMember(index, json),
        lookupMember(change.itemKey, seq, index, json),
      ];
    }
    case 'artifact_recorded': {
      const fact: ArtifactFact = { path: change.path, action: change.action, digest: change.digest, seq };
      const json = JSON.stringify(fact);
      return ['A', i, '', '', spanMember(index, json), lookupMember(change.path, seq, index, json)];
    }
    default: {
      const unknown: never = change;
      throw new StateError('invalid_change', `unplannable change ${JSON.stringify(unknown)}`);
    }
  }
}

function readApplyReply(
  turn: TurnEvent,
  reply: unknown[],
  stateless: ReadonlyMap<number, string>,
): { result: ApplyResult; skipped: readonly ChangeRejection[] } {
  const status = Number(reply[0]);
  const seq = turn.seq;
  const triples = (): ChangeRejection[] => {
    const rejected: ChangeRejection[] = [];
    for (let i = 2; i < reply.length; i += 3) {
      const index = Number(reply[i]);
      const reason = String(reply[i + 1]) as ChangeRejectionReason;
      rejected.push({
        index,
        reason,
        message: rejectionMessage(turn, index, reason, Number(reply[i + 2]), stateless),
      });
    }
    return rejected;
  };
  switch (status) {
    case 1: {
      const rejected = triples();
      return { result: { ok: true, seq, duplicate: false, rejected }, skipped: rejected };
    }
    case 2:
      return { result: { ok: true, seq, duplicate: true, rejected: [] }, skipped: triples() };
    default:
      return { result: readRefusal(turn, reply, status), skipped: [] };
  }
}

function readRefusal(turn: TurnEvent, reply: unknown[], status: number): ApplyResult {
  const seq = turn.seq;
  switch (status) {
    case -1: {
      const applied = Number(reply[1]);
      return {
        ok: false,
        seq,
        reason: 'seq_gap',
        message: `seq ${seq} after ${applied}: ${seq - applied - 1} turn(s) missing`,
      };
    }
    case -2:
      return {
        ok: false,
        seq,
        reason: 'seq_duplicate_conflict',
        message: `seq ${seq} was applied as turn ${String(reply[2])}, not ${turn.turnId}`,
      };
    case -3:
      return {
        ok: false,
        seq,
        reason: 'seq_regression',
        message: `seq ${seq} is behind ${Number(reply[1])} and was applied as turn ${String(reply[2])}, not ${turn.turnId}`,
      };
    default:
      throw new StateError('unexpected_reply', `projection-apply-turns answered ${JSON.stringify(reply)}`);
  }
}

/** SessionFold's message for a skipped change. */
function rejectionMessage(
  turn: TurnEvent,
  index: number,
  reason: ChangeRejectionReason,
  endSeq: number,
  stateless: ReadonlyMap<number, string>,
): string {
  const known = stateless.get(index);
  if (known !== undefined) return known;
  const change = turn.changes[index];
  const id = change !== undefined && 'itemId' in change ? change.itemId : '';
  switch (reason) {
    case 'duplicate_item':
      return `item ${id} was already opened`;
    case 'unknown_item':
      return `item ${id} was never opened`;
    case 'item_not_open':
      return `item ${id} already ended at seq ${endSeq}`;
    case 'missing_ids':
    case 'invalid_event':
      throw new StateError('unexpected_reply', `a stateful rejection ${reason} of change ${index}`);
    default: {
      const unknown: never = reason;
      throw new StateError('unexpected_reply', `unknown rejection ${String(unknown)}`);
    }
  }
}

// --- reading replies --------------------------------------------------------------------------------

type Nullable = string | null;

function itemAsOf(itemJson: Nullable, endJson: Nullable, toSeq: number): ItemFact | null {
  if (itemJson === null) return null;
  const item = JSON.parse(itemJson) as Omit<ItemFact, 'end'>;
  if (item.openedSeq > toSeq) return null;
  const end = endJson === null ? null : (JSON.parse(endJson) as ItemEnd);
  return { ...item, end: end !== null && end.seq <= toSeq ? end : null };
}

function readWatermark(raw: unknown[]): Watermark {
  const [applied, brokenSeq, brokenReason, position] = raw as [number, Nullable, Nullable, Nullable];
  return {
    appliedSeq: Number(applied),
    broken:
      brokenSeq === null || brokenSeq === undefined
        ? null
        : { seq: Number(brokenSeq), reason: brokenReason as DeadLetterReason },
    offsets: parsePosition(position ?? null),
  };
}

function parsePosition(raw: string | null): L0Position | null {
  if (raw === null) return null;
  const colon = raw.indexOf(':');
  return { partition: Number(raw.slice(0, colon)), offset: Number(raw.slice(colon + 1)) };
}

function applyKeys(keys: SessionKeys): string[] {
  return [
    keys.meta,
    keys.turns,
    keys.pos,
    keys.items,
    keys.ends,
    keys.open,
    keys.ended,
    keys.closed,
    keys.disp,
    keys.dispkey,
    keys.art,
    keys.artkey,
    keys.skipped,
  ];
}

function unwrap(results: [Error | null, unknown][] | null): unknown[] {
  if (results === null) throw new StateError('pipeline_discarded', 'the Redis pipeline was discarded');
  return results.map(([error, value]) => {
    if (error !== null) throw new StateError('redis', error.message, { cause: error });
    return value;
  });
}

function newEpoch(): string {
  return `${new Date().toISOString()}/${randomUUID()}`;
}

function nonEmpty(value: string | null | undefined): value is string {
  return typeof value === 'string' && value.length > 0;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
