import {
  compareText,
  sessionKey,
  TidemarkCoreError,
  type ArtifactFact,
  type BoundaryQuery,
  type DeadLetterReason,
  type DispositionFact,
  type ItemEnd,
  type ItemFact,
  type StateAtBoundary,
} from '@tidemark/core';
import type { ParsedItems } from './parsed-items.js';
import { lookupBounds, lookupMemberFact, memberFact, sessionKeys, stateAtScriptKeys } from './keys.js';

// Reading the projection: a session's state at a boundary (projection-state-at.lua), exactly as core's
// SessionFold.stateAt answers it, and its watermark (projection-watermark.lua).

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

/**
 * A session that cannot go on: the turn at expectedSeq is not at hand. Either turns after it came first
 * (parked: they apply, in order, once it arrives), or a turn past the watermark was refused (over the
 * parking bound, or the turn itself). `since`: when the session began to wait (ISO 8601, Redis's
 * clock); null is kept in the type for readers of older answers.
 */
export interface Stall {
  readonly expectedSeq: number;
  readonly since: string | null;
}

export interface Watermark {
  /** Every turn up to this seq, and none after, is applied (0 before the first). */
  readonly appliedSeq: number;
  readonly broken: BrokenMark | null;
  /** Set while the session waits for a turn that is not at hand (see Stall). */
  readonly stalled: Stall | null;
  /** The turns.l0 position of the turn at appliedSeq; null before the first turn. */
  readonly offsets: L0Position | null;
}

/** The arguments of projection-state-at.lua for a query (after checking it is a span). */
export function stateAtArgs(prefix: string, query: BoundaryQuery): (string | number)[] {
  const { fromSeq, toSeq } = query;
  if (!Number.isSafeInteger(fromSeq) || !Number.isSafeInteger(toSeq) || fromSeq < 1 || toSeq < fromSeq) {
    throw new TidemarkCoreError('invalid_input', `not a span: ${fromSeq}..${toSeq}`);
  }
  const keys = sessionKeys(prefix, query.tenantId, query.sessionId);
  return [
    ...stateAtScriptKeys(keys),
    fromSeq,
    toSeq,
    query.itemIds.length,
    ...query.itemIds,
    query.itemKeys.length,
    ...query.itemKeys.flatMap((key) => lookupBounds(key, toSeq)),
    query.paths.length,
    ...query.paths.flatMap((path) => lookupBounds(path, toSeq)),
  ];
}

/** A projection-state-at.lua reply read into core's StateAtBoundary for the query. */
export function readStateAt(query: BoundaryQuery, reply: unknown, parsed: ParsedItems): StateAtBoundary {
  const { fromSeq, toSeq } = query;
  const session = sessionKey(query.tenantId, query.sessionId);
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
    (Nullable | typeof asAbove)[],
    (Nullable | typeof asAbove)[],
    Nullable[],
    Nullable[],
  ];

  // Every item of the reply as of the boundary, by id: a lookup of one of them is answered "as above".
  const inReply = new Map<string, ItemFact | null>();
  const open: ItemFact[] = [];
  openIds.forEach((id, i) => {
    const fact = itemAsOf(parsed, session, id, openItems[i] ?? null, openEnds[i] ?? null, toSeq);
    inReply.set(id, fact);
    if (fact !== null && fact.end === null) open.push(fact);
  });
  const closed: ItemFact[] = [];
  closedIds.forEach((id, i) => {
    const fact = itemAsOf(parsed, session, id, closedItems[i] ?? null, closedEnds[i] ?? null, toSeq);
    inReply.set(id, fact);
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
    const item = lookupItems[i] ?? null;
    const end = lookupEnds[i] ?? null;
    const fact =
      item === asAbove
        ? (inReply.get(id) ?? null)
        : itemAsOf(parsed, session, id, item, end as Nullable, toSeq);
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

type Nullable = string | null;

/** A lookup's answer for an id the reply holds already, open or closed (the script sends it once). */
const asAbove = 1;

function itemAsOf(
  parsed: ParsedItems,
  session: string,
  itemId: string,
  itemJson: Nullable,
  endJson: Nullable,
  toSeq: number,
): ItemFact | null {
  if (itemJson === null) return null;
  // Open at the boundary: the shared, frozen value itself (most items of most answers).
  const open = parsed.parse(session, itemId, itemJson);
  if (open.openedSeq > toSeq) return null;
  const end = endJson === null ? null : (JSON.parse(endJson) as ItemEnd);
  return end !== null && end.seq <= toSeq ? { ...open, end } : open;
}

export function readWatermark(raw: unknown[]): Watermark {
  const [applied, brokenSeq, brokenReason, position, stalledAt] = raw as [
    number,
    Nullable,
    Nullable,
    Nullable,
    Nullable,
  ];
  const appliedSeq = Number(applied);
  const broken =
    brokenSeq === null || brokenSeq === undefined
      ? null
      : { seq: Number(brokenSeq), reason: brokenReason as DeadLetterReason };
  return {
    appliedSeq,
    broken,
    stalled:
      stalledAt === null || stalledAt === undefined
        ? null
        : { expectedSeq: appliedSeq + 1, since: new Date(Number(stalledAt)).toISOString() },
    offsets: parsePosition(position ?? null),
  };
}

export function parsePosition(raw: string | null): L0Position | null {
  if (raw === null) return null;
  const colon = raw.indexOf(':');
  return { partition: Number(raw.slice(0, colon)), offset: Number(raw.slice(colon + 1)) };
}
