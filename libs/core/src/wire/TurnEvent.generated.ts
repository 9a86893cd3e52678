// Generated from schemas/*.avsc by `pnpm exec tsx schemas/codegen.ts`. Do not edit: change the schemas and regenerate.
// Wire shapes as the codec decodes them: longs as numbers, bytes as Uint8Array, nullable fields as
// T | null, unions of variant records as unions discriminated on `type`.

import type { ArtifactAction, Disposition, ItemKind, ItemOutcome } from './Compaction.generated.js';

/**
 * One agent turn in a session's raw log (L0). Published by agent runtimes to turns.l0, keyed by
 * tenantId/sessionId. L0 is the source of truth: every summary, marker and projection is derived
 * from it and can be rebuilt from it.
 */
export interface TurnEvent {
  /** The tenant that owns the session. Non-empty. */
  readonly tenantId: string;
  /** The session, unique within its tenant. Non-empty. */
  readonly sessionId: string;
  /**
   * The turn's position in its session: 1 for the first turn, then contiguous with no gaps. A
   * redelivery with the same seq and turnId is a no-op; a seq past the next one is a gap; an
   * earlier seq with another turnId is refused.
   */
  readonly seq: number;
  /** The runtime's id for the turn; together with seq it makes redelivery idempotent. Non-empty. */
  readonly turnId: string;
  /**
   * When the turn happened, in milliseconds since the Unix epoch (UTC), as the runtime reports it.
   * Informational: no decision and no id depends on it.
   */
  readonly timestamp: number;
  /** Who produced the turn. */
  readonly role: TurnRole;
  /** The turn's text, as the model saw or produced it. */
  readonly content: string;
  /**
   * The turn's size in tokens as the runtime counted it; zero or more. Token budgets of compaction
   * policies are measured in it.
   */
  readonly tokenCount: number;
  /**
   * The state changes the turn made, applied in this order. Empty for a turn that changes no state.
   * A change that breaks the rules (closing an unknown item, say) is dead-lettered and skipped; the
   * rest of the turn still applies.
   */
  readonly changes: readonly (ItemOpened | ItemClosed | ItemDisposed | ArtifactRecorded)[];
  /**
   * The provider message the turn was converted from (by @tidemark/adapters); null for a turn
   * written as a TurnEvent. Informational: no decision and no id depends on it.
   */
  readonly original: OriginalMessage | null;
}

/** Who produced a turn, as in chat-completion messages. */
export type TurnRole = 'user' | 'assistant' | 'tool' | 'system';

/** Every TurnRole, in schema order. */
export const TurnRoleSymbols: readonly TurnRole[] = ['user', 'assistant', 'tool', 'system'];

/**
 * Something was opened that the next action may depend on until it ends: a tool call (a parallel
 * batch is one ItemOpened per call), an approval request awaiting a human, a file handle, a
 * subprocess, or a pending user constraint. An item ends when it is closed (ItemClosed) or disposed
 * (ItemDisposed with its itemId as the key).
 */
export interface ItemOpened {
  /** Discriminator of the state-change union: always item_opened. */
  readonly type: 'item_opened';
  /**
   * The item's id, unique within the session for its whole life (a tool-call id, say). Non-empty;
   * opening an id twice is refused.
   */
  readonly itemId: string;
  /** What kind of item was opened. */
  readonly kind: ItemKind;
  /** A short name: the tool's name, the file's path, the command, or the constraint in a few words. */
  readonly name: string;
  /** Optional detail: a tool call's arguments, what awaits approval, or a constraint's full text. */
  readonly detail: string | null;
  /**
   * For a subprocess or a file handle, the runtime's handle for it (a pid, a descriptor); null
   * otherwise.
   */
  readonly handle: string | null;
  /** For a subprocess, the path of its log; null otherwise. */
  readonly logPath: string | null;
}

/**
 * An open item ended with an outcome: a tool call returned, an approval was answered, a handle was
 * closed, a subprocess exited, a constraint was satisfied or withdrawn.
 */
export interface ItemClosed {
  /** Discriminator of the state-change union: always item_closed. */
  readonly type: 'item_closed';
  /**
   * The id of an item opened earlier in the session and still open. An unknown id is dead-lettered
   * as unknown_item; an item that already ended, as item_not_open.
   */
  readonly itemId: string;
  /** How the item ended. */
  readonly outcome: ItemOutcome;
  /** Optional detail: a result's gist, an error message, an exit code. */
  readonly detail: string | null;
}

/**
 * A negative state transition: something was rejected, failed or superseded. Summarizers tend to
 * drop these; the validator insists they are kept. The key is free-form so that things that are not
 * open items can be disposed (an approach, a plan: approach:add-column-backfill); when it names an
 * open item (a constraint, an approval request) that item ends here.
 */
export interface ItemDisposed {
  /** Discriminator of the state-change union: always item_disposed. */
  readonly type: 'item_disposed';
  /**
   * What was disposed: an item's id, or a free key for something that was never opened as an item
   * (approach:add-column-backfill). Non-empty. Disposing a key again replaces its disposition from
   * then on.
   */
  readonly itemKey: string;
  /**
   * Whether it was rejected (by a human or a rule), failed (when tried), or superseded (by
   * something else).
   */
  readonly disposition: Disposition;
  /** Why, in a sentence: what the next action must not repeat. */
  readonly reason: string;
  /**
   * For superseded, the key or item id that replaced it (required then); null for rejected and
   * failed.
   */
  readonly supersededBy: string | null;
}

/**
 * The agent created, modified or deleted a durable artifact (a file, usually) that a resumed agent
 * must know exists.
 */
export interface ArtifactRecorded {
  /** Discriminator of the state-change union: always artifact_recorded. */
  readonly type: 'artifact_recorded';
  /** The artifact's path or URI. Non-empty. */
  readonly path: string;
  /** What happened to the artifact. */
  readonly action: ArtifactAction;
  /**
   * A digest of the artifact's content after the action (sha256:<hex>, say); null when unknown or
   * deleted.
   */
  readonly digest: string | null;
}

/**
 * The message a turn was converted from, as the runtime's provider format had it, so that a resume
 * can give it back in that format.
 */
export interface OriginalMessage {
  /** The transcript format: openai-chat, openai-responses, anthropic or claude-code. */
  readonly format: string;
  /**
   * The message (a chat message, a Responses input item list, a Messages message, a Claude Code
   * line) as canonical JSON.
   */
  readonly json: string;
}
