import type { ResumeContext, TurnEvent } from '@tidemark/core';

// What every adapter shares: the formats, the session a transcript is converted into, and what a
// conversion gives back (the turns, and what it skipped, never silently).

/** Transcript formats a conversion reads. */
export const inputFormats = ['openai-chat', 'openai-responses', 'anthropic', 'claude-code'] as const;
export type InputFormat = (typeof inputFormats)[number];

/** Provider formats a resume context is given back in (`tidemark` is the context as it is). */
export const outputFormats = ['openai-chat', 'openai-responses', 'anthropic'] as const;
export type OutputFormat = (typeof outputFormats)[number];

/** The session a transcript becomes. */
export interface SessionRef {
  readonly tenantId: string;
  readonly sessionId: string;
}

export interface ConvertOptions extends SessionRef {
  /**
   * When the transcript carries no time of its own: the timestamp of its first turn, in ms (each later
   * turn one ms after). Default 0. Informational only: no id and no decision depends on it.
   */
  readonly startTimestamp?: number;
}

/** A part of a transcript a conversion did not understand, and skipped. */
export interface Skipped {
  /** 1-based: the line of a JSONL transcript, or the index + 1 of a message/item in a JSON one. */
  readonly at: number;
  readonly reason: string;
}

export interface Conversion {
  /** seq 1, 2, 3 … in transcript order; the same transcript always gives the same turns. */
  readonly turns: readonly TurnEvent[];
  readonly skipped: readonly Skipped[];
}

/** What `to<Format>` reads of a resume context (core `buildResumeContext`'s, or a resume result's). */
export type Context = Pick<ResumeContext, 'messages'>;
