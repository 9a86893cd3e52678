import { compareText } from './canonical.js';
import { invalidInput } from './errors.js';
import {
  conflictMessage,
  validateChange,
  validateTurn,
  type ApplyResult,
  type ChangeRejection,
} from './fold-checks.js';
import { turnContentHash } from './ids.js';
import type {
  ArtifactFact,
  BoundaryQuery,
  DispositionFact,
  ItemEnd,
  ItemFact,
  ItemOpened,
  StateAtBoundary,
  StateChange,
  TurnEvent,
} from './model.js';

// The reference fold of a session's L0 turns into the state the validator needs. The Redis projection
// implements the same rules and must give the same StateAtBoundary for the same BoundaryQuery; its tests
// compare the two on the same turns. The rules:
//
// - Turns apply in seq order: 1, then each next seq. A later seq is a gap and is refused (the watermark
//   stays, so boundaries past it are unverifiable). A seq already applied with the same content (its
//   turnContentHash: turnId and timestamp aside) is a redelivery and a no-op; with other content it is a
//   conflicting redelivery, refused, and the first stays. A turn with an empty id or an out-of-range
//   field is refused.
// - Within an applied turn, changes apply in order. A change that breaks a rule (closing an unknown item,
//   opening an id twice, closing an item that already ended, an empty id) is skipped and reported; the
//   rest of the turn still applies, so one bad change does not stall the session forever.
// - An item ends once: when it is closed, or when a disposition names it while it is open (a superseded
//   constraint, a rejected approval request). A disposition may name any key; disposing a key again
//   replaces its disposition from then on. An artifact's state is its latest action.

interface ItemRecord extends Omit<ItemFact, 'end'> {
  end: ItemEnd | null;
}

/** A session's L0 folded into indexes that answer StateAtBoundary for any boundary, past ones included. */
export class SessionFold {
  readonly tenantId: string;
  readonly sessionId: string;
  #appliedSeq = 0;
  /** contentHashes[seq - 1]: to tell a redelivery from a conflict. */
  readonly #contentHashes: string[] = [];
  readonly #items = new Map<string, ItemRecord>();
  /** Every disposition of a key, in seq order. */
  readonly #dispositions = new Map<string, DispositionFact[]>();
  /** Every action on a path, in seq order. */
  readonly #artifacts = new Map<string, ArtifactFact[]>();

  constructor(tenantId: string, sessionId: string) {
    this.tenantId = tenantId;
    this.sessionId = sessionId;
  }

  /** Every turn up to this seq, and none after, has been applied. */
  get appliedSeq(): number {
    return this.#appliedSeq;
  }

  apply(turn: TurnEvent): ApplyResult {
    const seq = turn.seq;
    const shape = validateTurn(turn);
    if (!shape.ok) return { ok: false, seq, reason: shape.reason, message: shape.message };
    if (turn.tenantId !== this.tenantId || turn.sessionId !== this.sessionId) {
      return {
        ok: false,
        seq,
        reason: 'invalid_event',
        message: `a turn of ${turn.tenantId}/${turn.sessionId} in ${this.tenantId}/${this.sessionId}`,
      };
    }
    if (seq > this.#appliedSeq + 1) {
      return {
        ok: false,
        seq,
        reason: 'seq_gap',
        message: `seq ${seq} after ${this.#appliedSeq}: ${seq - this.#appliedSeq - 1} turn(s) missing`,
      };
    }
    const hash = turnContentHash(turn);
    if (seq <= this.#appliedSeq) {
      const applied = this.#contentHashes[seq - 1]!;
      if (applied === hash) return { ok: true, seq, duplicate: true, rejected: [] };
      return {
        ok: false,
        seq,
        reason: 'conflicting_redelivery',
        message: conflictMessage(seq, applied, hash),
      };
    }
    const rejected: ChangeRejection[] = [];
    turn.changes.forEach((change, index) => {
      const problem = this.#applyChange(change, seq);
      if (problem !== null) rejected.push({ index, ...problem });
    });
    this.#contentHashes.push(hash);
    this.#appliedSeq = seq;
    return { ok: true, seq, duplicate: false, rejected };
  }

  #applyChange(change: StateChange, seq: number): Omit<ChangeRejection, 'index'> | null {
    const malformed = validateChange(change);
    if (malformed !== null) return malformed;
    switch (change.type) {
      case 'item_opened': {
        if (this.#items.has(change.itemId)) {
          return { reason: 'duplicate_item', message: `item ${change.itemId} was already opened` };
        }
        this.#items.set(change.itemId, { ...openedItem(change, seq), end: null });
        return null;
      }
      case 'item_closed': {
        const item = this.#items.get(change.itemId);
        if (item === undefined) {
          return { reason: 'unknown_item', message: `item ${change.itemId} was never opened` };
        }
        if (item.end !== null) {
          return {
            reason: 'item_not_open',
            message: `item ${change.itemId} already ended at seq ${item.end.seq}`,
          };
        }
        item.end = { type: 'closed', outcome: change.outcome, detail: change.detail, seq };
        return null;
      }
      case 'item_disposed': {
        const fact: DispositionFact = {
          itemKey: change.itemKey,
          disposition: change.disposition,
          reason: change.reason,
          supersededBy: change.supersededBy,
          seq,
        };
        appendTo(this.#dispositions, change.itemKey, fact);
        const item = this.#items.get(change.itemKey);
        if (item !== undefined && item.end === null) {
          item.end = { type: 'disposed', disposition: change.disposition, seq };
        }
        return null;
      }
      case 'artifact_recorded': {
        appendTo(this.#artifacts, change.path, {
          path: change.path,
          action: change.action,
          digest: change.digest,
          seq,
        });
        return null;
      }
      default: {
        // Unreachable for decoded Avro; a hand-built event may still carry anything.
        const unknown: never = change;
        return {
          reason: 'invalid_event',
          message: `unknown change type ${String((unknown as { type?: unknown }).type)}`,
        };
      }
    }
  }

  /** The state at the query's boundary. */
  stateAt(query: BoundaryQuery): StateAtBoundary {
    const { fromSeq, toSeq } = query;
    if (query.tenantId !== this.tenantId || query.sessionId !== this.sessionId) {
      throw invalidInput(
        `a query for ${query.tenantId}/${query.sessionId} of ${this.tenantId}/${this.sessionId}`,
      );
    }
    if (!Number.isSafeInteger(fromSeq) || !Number.isSafeInteger(toSeq) || fromSeq < 1 || toSeq < fromSeq) {
      throw invalidInput(`not a span: ${fromSeq}..${toSeq}`);
    }
    const inSpan = (seq: number): boolean => seq >= fromSeq && seq <= toSeq;

    const open: ItemFact[] = [];
    const closed: ItemFact[] = [];
    for (const item of this.#items.values()) {
      const fact = asOf(item, toSeq);
      if (fact === null) continue;
      if (fact.end === null) open.push(fact);
      else if (fact.end.type === 'closed' && inSpan(fact.end.seq)) closed.push(fact);
    }

    const disposed: DispositionFact[] = [];
    for (const history of this.#dispositions.values()) {
      const latest = latestWhere(history, inSpan);
      if (latest !== undefined) disposed.push(latest);
    }

    const artifacts: ArtifactFact[] = [];
    for (const history of this.#artifacts.values()) {
      if (history.some((fact) => inSpan(fact.seq))) {
        artifacts.push(latestWhere(history, (seq) => seq <= toSeq)!);
      }
    }

    const items = new Map<string, ItemFact>();
    for (const id of query.itemIds) {
      const item = this.#items.get(id);
      const fact = item === undefined ? null : asOf(item, toSeq);
      if (fact !== null) items.set(id, fact);
    }
    const dispositions = new Map<string, DispositionFact>();
    for (const key of query.itemKeys) {
      const latest = latestWhere(this.#dispositions.get(key) ?? [], (seq) => seq <= toSeq);
      if (latest !== undefined) dispositions.set(key, latest);
    }
    const artifactLookup = new Map<string, ArtifactFact>();
    for (const path of query.paths) {
      const latest = latestWhere(this.#artifacts.get(path) ?? [], (seq) => seq <= toSeq);
      if (latest !== undefined) artifactLookup.set(path, latest);
    }

    return {
      tenantId: this.tenantId,
      sessionId: this.sessionId,
      fromSeq,
      toSeq,
      appliedSeq: this.#appliedSeq,
      open: open.sort((a, b) => compareText(a.itemId, b.itemId)),
      closed: closed.sort((a, b) => compareText(a.itemId, b.itemId)),
      disposed: disposed.sort((a, b) => compareText(a.itemKey, b.itemKey)),
      artifacts: artifacts.sort((a, b) => compareText(a.path, b.path)),
      lookup: { items, dispositions, artifacts: artifactLookup },
    };
  }
}

/** Folds turns, in the order given, into a new SessionFold; each turn's result is reported. */
export function foldTurns(
  tenantId: string,
  sessionId: string,
  turns: Iterable<TurnEvent>,
): { readonly fold: SessionFold; readonly results: readonly ApplyResult[] } {
  const fold = new SessionFold(tenantId, sessionId);
  const results: ApplyResult[] = [];
  for (const turn of turns) results.push(fold.apply(turn));
  return { fold, results };
}

/** The item as of a boundary: null if not yet opened; its end hidden if it came later. */
function asOf(item: ItemRecord, toSeq: number): ItemFact | null {
  if (item.openedSeq > toSeq) return null;
  return { ...item, end: item.end !== null && item.end.seq <= toSeq ? item.end : null };
}

/** The last fact of a seq-ordered history whose seq passes the test. */
function latestWhere<T extends { readonly seq: number }>(
  history: readonly T[],
  test: (seq: number) => boolean,
): T | undefined {
  for (let index = history.length - 1; index >= 0; index--) {
    const fact = history[index]!;
    if (test(fact.seq)) return fact;
  }
  return undefined;
}

function appendTo<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

/** An item as its opening change at `seq` makes it (the fold's and the Redis projection's alike). */
export function openedItem(change: ItemOpened, seq: number): Omit<ItemFact, 'end'> {
  return {
    itemId: change.itemId,
    kind: change.kind,
    name: change.name,
    detail: change.detail,
    handle: change.handle,
    logPath: change.logPath,
    openedSeq: seq,
  };
}
