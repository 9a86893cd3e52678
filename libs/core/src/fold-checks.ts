import type { DeadLetterReason, StateChange, TurnEvent } from './model.js';
import {
  ArtifactActionSymbols,
  DispositionSymbols,
  ItemKindSymbols,
  ItemOutcomeSymbols,
  TurnRoleSymbols,
} from './wire/index.generated.js';

// The checks of a turn and of its changes that need no state (ids present, fields in range, symbols
// known), and what applying a turn answers. The fold runs them first; a store that applies turns
// elsewhere (the Redis projection) runs the same functions, so both refuse the same input with the
// same reasons and messages.

export type TurnRefusalReason = Extract<
  DeadLetterReason,
  'missing_ids' | 'invalid_event' | 'seq_gap' | 'conflicting_redelivery'
>;

export type ChangeRejectionReason = Extract<
  DeadLetterReason,
  'missing_ids' | 'invalid_event' | 'unknown_item' | 'duplicate_item' | 'item_not_open'
>;

/** A change that was skipped, and why. */
export interface ChangeRejection {
  /** Its index in the turn's changes. */
  readonly index: number;
  readonly reason: ChangeRejectionReason;
  readonly message: string;
}

export type ApplyResult =
  | {
      readonly ok: true;
      readonly seq: number;
      readonly duplicate: false;
      readonly rejected: readonly ChangeRejection[];
    }
  | { readonly ok: true; readonly seq: number; readonly duplicate: true; readonly rejected: readonly [] }
  | {
      readonly ok: false;
      readonly seq: number;
      readonly reason: TurnRefusalReason;
      readonly message: string;
    };

export type TurnValidation =
  | { readonly ok: true }
  | {
      readonly ok: false;
      readonly reason: Extract<TurnRefusalReason, 'missing_ids' | 'invalid_event'>;
      readonly message: string;
    };

const maxInt = 2 ** 31 - 1;

/**
 * The stateless checks of one turn: ids present, fields in range. What the contract runs on every
 * decoded turn before any service sees it, and what the fold runs before sequencing.
 */
export function validateTurn(turn: TurnEvent): TurnValidation {
  for (const key of ['tenantId', 'sessionId', 'turnId'] as const) {
    if (typeof turn[key] !== 'string' || turn[key].length === 0) {
      return { ok: false, reason: 'missing_ids', message: `${key} is empty` };
    }
  }
  if (!Number.isSafeInteger(turn.seq) || turn.seq < 1) {
    return { ok: false, reason: 'invalid_event', message: `seq ${turn.seq} is not an integer of at least 1` };
  }
  if (!Number.isSafeInteger(turn.timestamp)) {
    return { ok: false, reason: 'invalid_event', message: `timestamp ${turn.timestamp} is not an integer` };
  }
  if (!Number.isInteger(turn.tokenCount) || turn.tokenCount < 0 || turn.tokenCount > maxInt) {
    return {
      ok: false,
      reason: 'invalid_event',
      message: `tokenCount ${turn.tokenCount} is not an int of at least 0`,
    };
  }
  if (!TurnRoleSymbols.includes(turn.role)) {
    return {
      ok: false,
      reason: 'invalid_event',
      message: `role ${String(turn.role)} is not one of ${TurnRoleSymbols.join(', ')}`,
    };
  }
  if (typeof turn.content !== 'string' || !Array.isArray(turn.changes)) {
    return { ok: false, reason: 'invalid_event', message: 'content must be a string and changes an array' };
  }
  return { ok: true };
}

/**
 * The checks of a change that need no state: ids present, enum values known, supersededBy exactly for
 * superseded. The fold runs them first; a store that applies changes elsewhere (the Redis projection)
 * runs the same function, so both refuse the same changes with the same messages.
 */
export function validateChange(change: StateChange): Omit<ChangeRejection, 'index'> | null {
  switch (change.type) {
    case 'item_opened':
      if (!nonEmpty(change.itemId))
        return { reason: 'missing_ids', message: 'item_opened without an itemId' };
      if (!ItemKindSymbols.includes(change.kind)) {
        return {
          reason: 'invalid_event',
          message: `item ${change.itemId}: unknown kind ${String(change.kind)}`,
        };
      }
      return null;
    case 'item_closed':
      if (!nonEmpty(change.itemId))
        return { reason: 'missing_ids', message: 'item_closed without an itemId' };
      if (!ItemOutcomeSymbols.includes(change.outcome)) {
        return {
          reason: 'invalid_event',
          message: `item ${change.itemId}: unknown outcome ${String(change.outcome)}`,
        };
      }
      return null;
    case 'item_disposed':
      if (!nonEmpty(change.itemKey)) {
        return { reason: 'missing_ids', message: 'item_disposed without an itemKey' };
      }
      if (!DispositionSymbols.includes(change.disposition)) {
        return {
          reason: 'invalid_event',
          message: `${change.itemKey}: unknown disposition ${String(change.disposition)}`,
        };
      }
      if ((change.disposition === 'superseded') !== nonEmpty(change.supersededBy)) {
        return {
          reason: 'invalid_event',
          message: `${change.itemKey}: supersededBy is required for superseded and only for it`,
        };
      }
      return null;
    case 'artifact_recorded':
      if (!nonEmpty(change.path))
        return { reason: 'missing_ids', message: 'artifact_recorded without a path' };
      if (!ArtifactActionSymbols.includes(change.action)) {
        return {
          reason: 'invalid_event',
          message: `${change.path}: unknown action ${String(change.action)}`,
        };
      }
      return null;
    default: {
      const unknown: never = change;
      return {
        reason: 'invalid_event',
        message: `unknown change type ${String((unknown as { type?: unknown }).type)}`,
      };
    }
  }
}

function nonEmpty(value: string | null | undefined): value is string {
  return typeof value === 'string' && value.length > 0;
}

/** The refusal of a seq already applied with other content: both content hashes, the first kept. */
export function conflictMessage(seq: number, applied: string, offered: string): string {
  return `seq ${seq} was applied with content ${applied}; this turn's content is ${offered} (the first is kept)`;
}
