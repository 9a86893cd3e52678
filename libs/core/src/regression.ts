import { canonicalJson } from './canonical.js';
import { sha256Hex } from './ids.js';
import type { ItemFact, RegressionDetected, RuledOut, StateAtBoundary, TurnEvent } from './model.js';

// The regression watch: after a resume, a resumed agent that starts a step again which the session had
// already ruled out before the compaction boundary (a call that failed, an item rejected or failed, a
// constraint superseded) is told of, naming both turns. What was ruled out comes from the log (the
// projection at the boundary), never from the summary: a lossy summary is exactly when it matters.
//
// Two steps are the same when their kind, name and arguments are: the arguments canonically (a JSON
// detail with its keys sorted and its spacing dropped; any other detail with its whitespace collapsed),
// so a call written again with the same arguments in another order is the same call, and one with other
// arguments is not.

/** A step ruled out at or before the boundary, that a resumed agent must not start again as it was. */
export interface WatchedStep {
  /** callSignature of the item. */
  readonly signature: string;
  readonly itemId: string;
  readonly name: string;
  readonly detail: string | null;
  readonly ruledOut: RuledOut;
  /** The turn that ruled it out (the failing close, or the disposition). */
  readonly seq: number;
}

/** What a resume leaves to watch: the boundary it summarised up to, and the last turn its context held. */
export interface RegressionWatch {
  /** The node the resume started from (null: a raw resume from a checkpoint without one). */
  readonly nodeId: string | null;
  /** Steps ruled out up to here are known to the agent only through the summary. */
  readonly boundarySeq: number;
  /** Turns after this one were not in the context: the agent's own steps after the resume. */
  readonly resumedAtSeq: number;
}

/** A step the resumed agent started again: the new item's turn and the earlier one that ruled it out. */
export interface Regression {
  readonly seq: number;
  readonly itemId: string;
  readonly prior: WatchedStep;
}

/** The identity of a step: its kind, name and canonical arguments, hashed. */
export function callSignature(item: Pick<ItemFact, 'kind' | 'name' | 'detail'>): string {
  return sha256Hex(
    canonicalJson({
      kind: 'tidemark.step',
      itemKind: item.kind,
      name: item.name,
      args: canonicalArgs(item.detail),
    }),
  );
}

function canonicalArgs(detail: string | null): string | null {
  if (detail === null) return null;
  const trimmed = detail.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      return canonicalJson(JSON.parse(trimmed) as unknown);
    } catch {
      // Not JSON after all: compared as text.
    }
  }
  return trimmed.replace(/\s+/g, ' ');
}

/**
 * The item ids whose facts `watchedSteps` needs besides the state's own lists: the disposed keys (a
 * disposition of an item names it by its id). Ask the projection for them in a second read.
 */
export function disposedKeys(state: Pick<StateAtBoundary, 'disposed'>): string[] {
  return state.disposed.map((d) => d.itemKey);
}

/**
 * The steps ruled out at or before the boundary, from the state of the span 1..boundary with the
 * disposed keys looked up: calls and other items closed with an error (failed), items disposed rejected
 * or failed, and constraints superseded. One step per signature, the latest.
 */
export function watchedSteps(state: Pick<StateAtBoundary, 'closed' | 'disposed' | 'lookup'>): WatchedStep[] {
  const steps = new Map<string, WatchedStep>();
  const add = (item: ItemFact, ruledOut: RuledOut, seq: number) => {
    const signature = callSignature(item);
    const known = steps.get(signature);
    if (known !== undefined && known.seq >= seq) return;
    steps.set(signature, {
      signature,
      itemId: item.itemId,
      name: item.name,
      detail: item.detail,
      ruledOut,
      seq,
    });
  };
  for (const item of state.closed) {
    if (item.end?.type === 'closed' && item.end.outcome === 'error' && item.kind !== 'constraint') {
      add(item, 'failed', item.end.seq);
    }
  }
  for (const disposition of state.disposed) {
    const item = state.lookup.items.get(disposition.itemKey);
    if (item === undefined) continue; // a key that names no item (an approach): no step to repeat
    const constraint = item.kind === 'constraint';
    if (constraint ? disposition.disposition === 'superseded' : disposition.disposition !== 'superseded') {
      add(item, disposition.disposition, disposition.seq);
    }
  }
  return [...steps.values()].sort((a, b) => a.seq - b.seq || a.signature.localeCompare(b.signature));
}

/**
 * The steps a turn starts again: each item it opens after the resume whose signature (its kind among
 * them) a watched step has, ruled out at or before the boundary.
 */
export function regressionsIn(
  turn: Pick<TurnEvent, 'seq' | 'changes'>,
  watch: RegressionWatch,
  watched: (signature: string) => WatchedStep | undefined,
): Regression[] {
  if (turn.seq <= watch.resumedAtSeq) return [];
  const found: Regression[] = [];
  for (const change of turn.changes) {
    if (change.type !== 'item_opened') continue;
    const prior = watched(callSignature(change));
    if (prior === undefined || prior.seq > watch.boundarySeq) continue;
    found.push({ seq: turn.seq, itemId: change.itemId, prior });
  }
  return found;
}

/** A regression's id: the session, the new step and the earlier one (a redelivery is the same event). */
export function regressionIdOf(ref: {
  tenantId: string;
  sessionId: string;
  seq: number;
  itemId: string;
  priorSeq: number;
}): string {
  const { tenantId, sessionId, seq, itemId, priorSeq } = ref;
  return sha256Hex(
    canonicalJson({ kind: 'tidemark.regression', tenantId, sessionId, seq, itemId, priorSeq }),
  );
}

/** The RegressionDetected event of a regression found under a session's watch. */
export function regressionDetected(
  ref: { readonly tenantId: string; readonly sessionId: string },
  regression: Regression,
  watch: RegressionWatch,
): RegressionDetected {
  const { tenantId, sessionId } = ref;
  const { seq, itemId, prior } = regression;
  return {
    regressionId: regressionIdOf({ tenantId, sessionId, seq, itemId, priorSeq: prior.seq }),
    tenantId,
    sessionId,
    seq,
    itemId,
    name: prior.name,
    detail: prior.detail,
    priorSeq: prior.seq,
    priorItemId: prior.itemId,
    ruledOut: prior.ruledOut,
    nodeId: watch.nodeId,
    boundarySeq: watch.boundarySeq,
    resumedAtSeq: watch.resumedAtSeq,
  };
}
