// Unexpected failures of the core: one small hierarchy with a closed list of codes. Expected outcomes
// (a failed check, a refused turn) are values, never these.

export type CoreErrorCode =
  /** A caller broke a precondition: mismatched state, a non-contiguous span, an unsupported value. */
  | 'invalid_input'
  /** A policy value is out of range. */
  | 'invalid_policy'
  /** The model endpoint could not be reached. */
  | 'model_transport'
  /** The model endpoint answered with a non-2xx status. */
  | 'model_http'
  /** The model answered, but not with the JSON the summarizer asked for. */
  | 'model_malformed';

export class TidemarkCoreError extends Error {
  override readonly name = 'TidemarkCoreError';
  readonly code: CoreErrorCode;
  /** Whether trying the same call again may succeed (a timeout, a 503), as opposed to a bug or bad data. */
  readonly retriable: boolean;

  constructor(code: CoreErrorCode, message: string, options: { retriable?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retriable = options.retriable ?? false;
  }
}

export function invalidInput(message: string): TidemarkCoreError {
  return new TidemarkCoreError('invalid_input', message);
}
