import { TidemarkError, type StateErrorCode } from '@tidemark/core';

// The state library's unexpected failures. Expected outcomes (a refused turn, a timed-out wait, a lost
// projection) are values, never these. The codes are listed with every other in core's errors.ts.

export type { StateErrorCode };

/** Redis errors of a script (a bug on one side) are not worth retrying; a lost connection is. */
const scriptFailure = /script|ERR /;

export class StateError extends TidemarkError<StateErrorCode> {
  override readonly name: string = 'StateError';

  constructor(code: StateErrorCode, message: string, options: { cause?: unknown; retriable?: boolean } = {}) {
    super(code, message, {
      ...options,
      retriable:
        options.retriable ??
        (code === 'pipeline_discarded' || (code === 'redis' && !scriptFailure.test(message))),
    });
  }
}
