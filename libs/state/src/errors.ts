// Unexpected failures of the state library: one small hierarchy with a closed list of codes. Expected
// outcomes (a refused turn, a timed-out wait, a lost projection) are values, never these.

export type StateErrorCode =
  /** Redis answered a command with an error (connection lost, script error, out of memory). */
  | 'redis'
  /** A pipeline was discarded before it ran. */
  | 'pipeline_discarded'
  /** A script answered something its header does not list: a bug, never bad data. */
  | 'unexpected_reply'
  /** A change the planner cannot encode (a hand-built event of an unknown type got past the checks). */
  | 'invalid_change';

export class StateError extends Error {
  override readonly name = 'StateError';
  readonly code: StateErrorCode;
  /** Whether the same call may succeed later (Redis errors are: a reconnect, a restart). */
  readonly retriable: boolean;

  constructor(code: StateErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retriable = code === 'redis' || code === 'pipeline_discarded';
  }
}
