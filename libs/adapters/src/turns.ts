import {
  canonicalJson,
  estimateTokens,
  sha256Hex,
  type StateChange,
  type TurnEvent,
  type TurnRole,
} from '@tidemark/core';
import type { ConvertOptions, InputFormat } from './types.js';

// Building TurnEvents from a transcript's messages, the same way for every format: seq in transcript
// order, ids from the transcript's own ids (else from the message's position and content), the original
// message kept as canonical JSON, tokens estimated as core does.

export class TurnBuilder {
  readonly #turns: TurnEvent[] = [];
  readonly #format: InputFormat;
  readonly #options: ConvertOptions;

  constructor(format: InputFormat, options: ConvertOptions) {
    this.#format = format;
    this.#options = options;
  }

  /**
   * Appends a turn. `id` is the transcript's own id for the message when it has one (a Responses item
   * id, a Claude Code uuid); otherwise the turn id derives from the message's position and content.
   */
  add(turn: {
    readonly role: TurnRole;
    readonly content: string;
    readonly changes: readonly StateChange[];
    readonly message: unknown;
    readonly id?: string | null;
    readonly timestamp?: number | null;
  }): TurnEvent {
    const seq = this.#turns.length + 1;
    const json = canonicalJson(turn.message);
    const turnId =
      turn.id !== undefined && turn.id !== null && turn.id.length > 0
        ? `${this.#format}:${turn.id}`
        : `${this.#format}:${seq}:${sha256Hex(json).slice(0, 16)}`;
    const event: TurnEvent = {
      tenantId: this.#options.tenantId,
      sessionId: this.#options.sessionId,
      seq,
      turnId,
      timestamp: turn.timestamp ?? (this.#options.startTimestamp ?? 0) + seq - 1,
      role: turn.role,
      content: turn.content,
      tokenCount: estimateTokens(turn.content),
      changes: [...turn.changes],
      original: { format: this.#format, json },
    };
    this.#turns.push(event);
    return event;
  }

  get turns(): readonly TurnEvent[] {
    return this.#turns;
  }
}

/** A content digest as artifacts carry it. */
export function contentDigest(content: string): string {
  return `sha256:${sha256Hex(content)}`;
}

/** A tool call's arguments as an item's detail: canonical JSON when they parse, else as given. */
export function argumentsDetail(args: unknown): string | null {
  if (args === undefined || args === null) return null;
  if (typeof args === 'string') {
    try {
      return canonicalJson(JSON.parse(args) as unknown);
    } catch {
      return args;
    }
  }
  return canonicalJson(args);
}
