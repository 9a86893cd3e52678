import {
  regressionIdOf,
  revocationIdOf,
  validateTurn,
  type Compaction,
  type DeadLetter,
  type MarkerDecision,
  type MarkerRevocation,
  type RegressionDetected,
  type TurnEvent,
} from '@tidemark/core';
import { sessionKey, type EventsByRole, type TopicRole } from './topics.js';

// The stateless checks every decoded event passes before any service sees it, and every event passes
// before it is sent. Pure. Turns use the core's own validateTurn, so the contract and the fold agree on
// what a well-formed turn is; what needs the session's history (seq gaps, unknown items, a superseded
// disposition without supersededBy inside a turn) is the fold's to judge, change by change, so that one
// bad change does not cost the whole turn. Claims inside a compaction are the check's to judge (a false
// claim makes the marker invalid; it does not make the record unreadable).

export type EventValidation =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: 'missing_ids' | 'invalid_event'; readonly message: string };

const valid: EventValidation = { ok: true };
const maxInt = 2 ** 31 - 1;

function missing(message: string): EventValidation {
  return { ok: false, reason: 'missing_ids', message };
}
function invalid(message: string): EventValidation {
  return { ok: false, reason: 'invalid_event', message };
}

function firstEmpty(record: object, keys: readonly string[]): string | null {
  for (const key of keys) {
    const value = (record as Record<string, unknown>)[key];
    if (typeof value !== 'string' || value.length === 0) return key;
  }
  return null;
}

function intAtLeast(value: number, min: number): boolean {
  return Number.isInteger(value) && value >= min && value <= maxInt;
}
function longAtLeast(value: number, min: number): boolean {
  return Number.isSafeInteger(value) && value >= min;
}

/** The stateless checks of an event of a role. */
export function validateEvent<R extends TopicRole>(role: R, event: EventsByRole[R]): EventValidation {
  switch (role) {
    case 'turns':
      return validateTurn(event as TurnEvent);
    case 'compactions':
      return validateCompaction(event as Compaction);
    case 'markers':
      return validateMarker(event as MarkerDecision);
    case 'revocations':
      return validateRevocation(event as MarkerRevocation);
    case 'regressions':
      return validateRegression(event as RegressionDetected);
    case 'deadletter':
      return validateDeadLetter(event as DeadLetter);
    default: {
      const never: never = role;
      return invalid(`unknown role ${String(never)}`);
    }
  }
}

export function validateCompaction(c: Compaction): EventValidation {
  const empty =
    firstEmpty(c, ['compactionId', 'tenantId', 'sessionId', 'policyId']) ??
    (firstEmpty(c.marker, ['markerId', 'nodeId']) === null
      ? null
      : `marker.${firstEmpty(c.marker, ['markerId', 'nodeId'])}`);
  if (empty !== null) return missing(`${empty} is empty`);
  if (c.children.some((child) => child.length === 0)) return missing('a child compaction id is empty');
  const { span, marker } = c;
  if (!intAtLeast(c.tier, 1)) return invalid(`tier ${c.tier} is not an int of at least 1`);
  if (!intAtLeast(c.generation, 0)) return invalid(`generation ${c.generation} is not an int of at least 0`);
  if (!intAtLeast(c.attempt, 0)) return invalid(`attempt ${c.attempt} is not an int of at least 0`);
  if (!intAtLeast(c.tokenCount, 0)) return invalid(`tokenCount ${c.tokenCount} is not an int of at least 0`);
  if (!longAtLeast(span.fromSeq, 1) || !longAtLeast(span.toSeq, span.fromSeq)) {
    return invalid(`span ${span.fromSeq}..${span.toSeq} is not a span of seqs from 1`);
  }
  if (
    !intAtLeast(span.l0Partition, 0) ||
    !longAtLeast(span.fromOffset, 0) ||
    !longAtLeast(span.toOffset, span.fromOffset)
  ) {
    return invalid(`span offsets ${span.l0Partition}:${span.fromOffset}..${span.toOffset} are out of range`);
  }
  if (c.tier === 1 && c.children.length > 0) return invalid('an L1 summary has no children');
  if (c.tier > 1 && c.children.length === 0) return invalid(`a tier ${c.tier} digest needs children`);
  if (marker.nodeId !== c.compactionId)
    return invalid(`marker.nodeId ${marker.nodeId} is not the compaction ${c.compactionId}`);
  if (marker.depth !== c.tier || marker.generation !== c.generation || marker.toSeq !== span.toSeq) {
    return invalid('the marker candidate does not match the node (depth, generation, toSeq)');
  }
  if (marker.l0Partition !== span.l0Partition || marker.l0Offset !== span.toOffset) {
    return invalid('the marker candidate does not point at the span end (l0Partition, l0Offset)');
  }
  if (c.repairOf !== null && c.repairOf.length === 0)
    return missing('repairOf is empty (null when not a repair)');
  return valid;
}

export function validateMarker(m: MarkerDecision): EventValidation {
  if (m.type !== 'marker_emitted' && m.type !== 'marker_invalid') {
    return invalid(
      `type ${String((m as { type?: unknown }).type)} is not a marker decision (marker_emitted or marker_invalid)`,
    );
  }
  const empty = firstEmpty(m, ['markerId', 'compactionId', 'tenantId', 'sessionId']);
  if (empty !== null) return missing(`${empty} is empty`);
  if (!intAtLeast(m.depth, 1)) return invalid(`depth ${m.depth} is not an int of at least 1`);
  if (!intAtLeast(m.generation, 0)) return invalid(`generation ${m.generation} is not an int of at least 0`);
  if (!longAtLeast(m.toSeq, 1)) return invalid(`toSeq ${m.toSeq} is not at least 1`);
  if (!intAtLeast(m.l0Partition, 0) || !longAtLeast(m.l0Offset, 0)) {
    return invalid(`l0 position ${m.l0Partition}:${m.l0Offset} is out of range`);
  }
  if (m.type === 'marker_emitted') return valid;
  if (m.violations.length === 0) return invalid('a MarkerInvalid needs at least one violation');
  const { fallback } = m;
  if (!longAtLeast(fallback.toSeq, 0) || !intAtLeast(fallback.l0Partition, 0)) {
    return invalid(`fallback ${fallback.toSeq}@${fallback.l0Partition} is out of range`);
  }
  const start = fallback.markerId === null && fallback.compactionId === null && fallback.l0Offset === null;
  const atMarker =
    (fallback.markerId?.length ?? 0) > 0 &&
    (fallback.compactionId?.length ?? 0) > 0 &&
    fallback.l0Offset !== null &&
    longAtLeast(fallback.l0Offset, 0) &&
    fallback.toSeq >= 1;
  if (start ? fallback.toSeq !== 0 : !atMarker) {
    return invalid(
      'the fallback is neither the session start (all null, toSeq 0) nor a marker (ids, offset, toSeq)',
    );
  }
  return valid;
}

export function validateRevocation(r: MarkerRevocation): EventValidation {
  const empty = firstEmpty(r, ['revocationId', 'tenantId', 'sessionId', 'markerId', 'reason', 'requestedBy']);
  if (empty !== null) return missing(`${empty} is empty`);
  const { tenantId, sessionId, markerId } = r;
  if (r.revocationId !== revocationIdOf({ tenantId, sessionId, markerId })) {
    return invalid('revocationId is not the id of this session and marker (core revocationIdOf)');
  }
  return valid;
}

export function validateRegression(r: RegressionDetected): EventValidation {
  const empty = firstEmpty(r, ['regressionId', 'tenantId', 'sessionId', 'itemId', 'name', 'priorItemId']);
  if (empty !== null) return missing(`${empty} is empty`);
  if (!(
    r.priorSeq >= 1 &&
    r.priorSeq <= r.boundarySeq &&
    r.boundarySeq <= r.resumedAtSeq &&
    r.resumedAtSeq < r.seq
  )) {
    return invalid('the seqs must order priorSeq ≤ boundarySeq ≤ resumedAtSeq < seq');
  }
  const { tenantId, sessionId, seq, itemId, priorSeq } = r;
  if (r.regressionId !== regressionIdOf({ tenantId, sessionId, seq, itemId, priorSeq })) {
    return invalid('regressionId is not the id of this session, step and earlier step (core regressionIdOf)');
  }
  return valid;
}

export function validateDeadLetter(d: DeadLetter): EventValidation {
  const empty = firstEmpty(d, ['originalTopic', 'service']);
  if (empty !== null) return missing(`${empty} is empty`);
  if (!intAtLeast(d.partition, 0) || !longAtLeast(d.offset, 0)) {
    return invalid(`position ${d.partition}:${d.offset} is out of range`);
  }
  if (!longAtLeast(d.observedAt, 0)) return invalid(`observedAt ${d.observedAt} is out of range`);
  return valid;
}

/**
 * The key every event of a role must carry: its session's key; a dead letter keeps the key of the
 * record it holds (null when that had none).
 */
export function expectedKey<R extends TopicRole>(role: R, event: EventsByRole[R]): string | null {
  if (role === 'deadletter') {
    const key = (event as DeadLetter).key;
    return key === null ? null : Buffer.from(key).toString('utf8');
  }
  const { tenantId, sessionId } = event as
    TurnEvent | Compaction | MarkerDecision | MarkerRevocation | RegressionDetected;
  return sessionKey(tenantId, sessionId);
}
