import {
  conflictMessage,
  sessionKey,
  turnContentHash,
  type ApplyResult,
  type ChangeRejection,
  type ChangeRejectionReason,
  type TurnEvent,
} from '@tidemark/core';
import type { ChainableCommander } from 'ioredis';
import { StateError } from './errors.js';
import { applyScriptKeys, sessionKeys, type SessionKeys, type SessionRef } from './keys.js';
import { planTurn, type PositionedTurn } from './projection-plan.js';
import { parsePosition } from './projection-read.js';
import { unexpectedReply } from './replies.js';

// Applying turns to the projection: each turn planned (projection-plan.ts: core's stateless checks, in
// core's order, and the script's arguments), one projection-apply-turns.lua call per session and batch,
// and its replies read back into exactly what core's SessionFold.apply answers.

/** Turns per apply script call: bounds how long one call holds Redis (about 15 µs a turn). */
const maxTurnsPerCall = 256;

/** The replies of lua/projection-apply-turns.lua per turn (its header lists them). */
const applyReply = { applied: 1, redelivered: 2, seqGap: -1, conflict: -2 } as const;

/**
 * A session that began or ceased to wait for a turn past its watermark (stalled, as the watermark reads
 * it), or is still waiting: told by the apply and mark scripts for every session a call touched that is
 * or was stalled, kept in the projection's index of stalled sessions. `continued` tells nothing new; it
 * re-asserts the index entry, which a crash between the script and the index write may have lost.
 */
export type StallChange =
  | {
      readonly change: 'began' | 'continued';
      readonly tenantId: string;
      readonly sessionId: string;
      readonly expectedSeq: number;
      /** When the session was marked broken (epoch ms, Redis's clock). */
      readonly since: number;
    }
  | { readonly change: 'ended'; readonly tenantId: string; readonly sessionId: string };

/**
 * A parked turn whose gap was filled: the caller re-publishes it to turns.l0 (where it then follows the
 * turn it waited for, and applies like any turn). Its first copy stays where it is in turns.l0.
 */
export interface ReleasedTurn extends SessionRef {
  readonly seq: number;
  readonly partition: number;
  readonly offset: number;
}

/**
 * What one batch did: an outcome per turn, in the turns' order, the parked turns to re-publish, and
 * the stalls it began or ended.
 */
export interface AppliedBatch {
  readonly outcomes: ApplyOutcome[];
  readonly released: ReleasedTurn[];
  readonly stalls: StallChange[];
}

/** What applying one turn did: core's ApplyResult, for the turn at its turns.l0 position. */
export interface ApplyOutcome extends PositionedTurn {
  /** Exactly what core's SessionFold.apply answers for the turn. */
  readonly result: ApplyResult;
  /**
   * A seq_gap refusal that parked the turn: it is not a dead letter, and applies (re-published) once the
   * turns before it have. False for every other outcome.
   */
  readonly parked: boolean;
  /**
   * The turn's skipped changes: those of `result` when it was applied now, and for a redelivery those of
   * its first apply (the fold reports none then), so that a crash between applying and dead-lettering
   * loses no dead letter. Empty for a refused turn.
   */
  readonly skipped: readonly ChangeRejection[];
}

/**
 * Queues one command per session (its turns of the batch, in order; sessions are independent) and one
 * per turn refused before Redis that can still mark its session; returns how to read their replies
 * (in the same order) into outcomes, in the turns' order.
 */
export function queueApply(
  pipeline: ChainableCommander,
  prefix: string,
  turns: readonly PositionedTurn[],
  maxParked: number,
): (replies: readonly unknown[]) => AppliedBatch {
  const plans = turns.map((positioned) => planTurn(positioned));
  type Call = { order: number; turn: TurnEvent; keys: SessionKeys; args: string[]; count: number };
  /** The open call of each session, and every call in pipeline order. */
  const sessions = new Map<string, Call>();
  const calls: Call[] = [];
  /** Per plan, where its reply is: its session's order and its index in that session's reply. */
  const slots: ({ order: number; index: number } | null)[] = [];
  /** The turns whose refusal marks their session, in pipeline order (their replies come first). */
  const marked: TurnEvent[] = [];
  for (const plan of plans) {
    const { turn, partition, offset } = plan.positioned;
    if (plan.kind === 'refused') {
      if (plan.markAt !== null) {
        const keys = sessionKeys(prefix, turn.tenantId, turn.sessionId);
        void pipeline.tidemarkProjectionMarkBroken(
          keys.meta,
          keys.parked,
          keys.turns,
          plan.markAt,
          plan.result.reason,
        );
        marked.push(turn);
      }
      slots.push(null);
      continue;
    }
    const id = sessionKey(turn.tenantId, turn.sessionId);
    let session = sessions.get(id);
    // A session's turns beyond a bound go to a further call (queued after it, so still in order): one
    // script holds Redis for as long as it runs, and readers wait behind it.
    if (session === undefined || session.count >= maxTurnsPerCall) {
      const keys = session?.keys ?? sessionKeys(prefix, turn.tenantId, turn.sessionId);
      session = { order: calls.length, turn, keys, args: [String(maxParked)], count: 0 };
      sessions.set(id, session);
      calls.push(session);
    }
    session.args.push(
      String(turn.seq),
      turnContentHash(turn),
      `${partition}:${offset}`,
      String(plan.args.length),
    );
    for (const arg of plan.args) session.args.push(arg);
    slots.push({ order: session.order, index: session.count++ });
  }
  // The sessions' commands follow the marks, in the order the sessions first appear.
  for (const { keys, args } of calls) {
    void pipeline.tidemarkProjectionApply(...applyScriptKeys(keys), ...args);
  }
  const marks = marked.length;
  return (replies) => {
    const outcomes = plans.map((plan, i): ApplyOutcome => {
      const { turn, partition, offset } = plan.positioned;
      if (plan.kind === 'refused') {
        return { turn, partition, offset, result: plan.result, parked: false, skipped: [] };
      }
      const slot = slots[i]!;
      const reply = (replies[marks + slot.order] as unknown[][])[slot.index]!;
      return { turn, partition, offset, ...readApplyReply(turn, reply, plan.stateless) };
    });
    const stalls: StallChange[] = [];
    const released: ReleasedTurn[] = [];
    marked.forEach((turn, i) => readStall(turn, (replies[i] as unknown[])[1], stalls));
    calls.forEach(({ turn, count }, order) => {
      const reply = replies[marks + order] as unknown[][];
      readReleased(turn, reply[count]!, released);
      readStall(turn, reply[count + 1], stalls);
    });
    return { outcomes, released, stalls };
  };
}

/** The apply script's parked turns to re-publish ({seq, "partition:offset", ...}), into `released`. */
function readReleased(session: SessionRef, reply: readonly unknown[], released: ReleasedTurn[]): void {
  const { tenantId, sessionId } = session;
  for (let i = 0; i < reply.length; i += 2) {
    const position = parsePosition(String(reply[i + 1]))!;
    released.push({ tenantId, sessionId, seq: Number(reply[i]), ...position });
  }
}

/** A script's stall reply ({0}, {1 or 2, stalledAt, expectedSeq} or {-1}: see its header), into `stalls`. */
export function readStall(session: SessionRef, reply: unknown, stalls: StallChange[]): void {
  const [change, since, expectedSeq] = reply as [number, number?, number?];
  if (change === 1 || change === 2) {
    const { tenantId, sessionId } = session;
    stalls.push({
      change: change === 1 ? 'began' : 'continued',
      tenantId,
      sessionId,
      expectedSeq: Number(expectedSeq),
      since: Number(since),
    });
  } else if (change === -1) {
    stalls.push({ change: 'ended', tenantId: session.tenantId, sessionId: session.sessionId });
  } else if (change !== 0) {
    throw unexpectedReply('projection stall', reply);
  }
}

function readApplyReply(
  turn: TurnEvent,
  reply: unknown[],
  stateless: ReadonlyMap<number, string>,
): { result: ApplyResult; parked: boolean; skipped: readonly ChangeRejection[] } {
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
    case applyReply.applied: {
      const rejected = triples();
      return { result: { ok: true, seq, duplicate: false, rejected }, parked: false, skipped: rejected };
    }
    case applyReply.redelivered:
      return { result: { ok: true, seq, duplicate: true, rejected: [] }, parked: false, skipped: triples() };
    default: {
      const parked = status === applyReply.seqGap && Number(reply[2]) === 1;
      return { result: readRefusal(turn, reply, status), parked, skipped: [] };
    }
  }
}

function readRefusal(turn: TurnEvent, reply: unknown[], status: number): ApplyResult {
  const seq = turn.seq;
  switch (status) {
    case applyReply.seqGap: {
      const applied = Number(reply[1]);
      return {
        ok: false,
        seq,
        reason: 'seq_gap',
        message: `seq ${seq} after ${applied}: ${seq - applied - 1} turn(s) missing`,
      };
    }
    case applyReply.conflict:
      return {
        ok: false,
        seq,
        reason: 'conflicting_redelivery',
        message: conflictMessage(seq, String(reply[2]), turnContentHash(turn)),
      };
    default:
      throw unexpectedReply('projection-apply-turns', reply);
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
