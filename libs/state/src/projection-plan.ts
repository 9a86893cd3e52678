import {
  openedItem,
  validateChange,
  validateTurn,
  type ApplyResult,
  type ArtifactFact,
  type DispositionFact,
  type ItemEnd,
  type StateChange,
  type TurnEvent,
} from '@tidemark/core';
import { StateError } from './errors.js';
import { lookupMember, spanMember } from './keys.js';

// Planning one turn for projection-apply-turns.lua: core's stateless checks, in core's order (a turn
// they refuse never reaches the script), and the script's six fields per change, every stored value
// built here so that the script only decides what depends on the stored state.

/** A turn as read from turns.l0: the event and where it lives. */
export interface PositionedTurn {
  readonly turn: TurnEvent;
  readonly partition: number;
  readonly offset: number;
}

export type TurnPlan =
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

export function planTurn(positioned: PositionedTurn): TurnPlan {
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
    case 'item_opened':
      return ['O', i, change.itemId, JSON.stringify(openedItem(change, seq)), '', ''];
    case 'item_closed': {
      // `type` first: projection-state-at.lua tells a close from a disposition by the JSON's start.
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

function nonEmpty(value: string | null | undefined): value is string {
  return typeof value === 'string' && value.length > 0;
}
