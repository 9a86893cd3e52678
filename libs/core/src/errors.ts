// Every error Tidemark throws is a TidemarkError: one base, a closed list of codes (each package narrows
// it to its own), and whether the same call may succeed if tried again. Expected outcomes (a failed
// check, a refused turn, a record that does not decode) are values, never errors. The bus reads
// `retriable`: a batch that failed with a retriable error is redelivered as a known condition (told by the
// service, kept at debug by the bus), any other failure as the unexpected error it is.

/** @tidemark/core */
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

/** @tidemark/contract: what a caller did wrong, or what the infrastructure did. */
export type ContractErrorCode =
  /** An event handed to send/publish did not pass validation or does not fit its schema. */
  | 'invalid_event'
  /** An event handed to a role that does not carry it (a TurnEvent to markers, say). */
  | 'wrong_role'
  /** The publisher saw a seq that is not the session's last seq + 1. */
  | 'seq_out_of_order'
  /** The schema registry refused or failed a call (an incompatible schema, a 5xx, unreachable). */
  | 'registry'
  /**
   * The broker did not take a send (kafkajs gave up on it), or a turn was not sent because an earlier
   * send of its session failed or timed out. Retriable: republish the same turns, same seqs.
   */
  | 'send_failed'
  /**
   * A send was not acknowledged within the publisher's `timeoutMs`; whether it reached the broker is
   * unknown. Retriable: republish the same turns, same seqs (a turn already stored is a redelivery).
   */
  | 'send_timeout'
  /** The object was used after it was closed. */
  | 'closed';

/** @tidemark/state */
export type StateErrorCode =
  /** Redis answered a command with an error (connection lost, script error, out of memory). */
  | 'redis'
  /** A pipeline was discarded before it ran. */
  | 'pipeline_discarded'
  /** A script answered something its header does not list: a bug, never bad data. */
  | 'unexpected_reply'
  /** A change the planner cannot encode (a hand-built event of an unknown type got past the checks). */
  | 'invalid_change'
  /** The compactor's window changed in Redis while its batch ran (Redis lost or rebuilt): redo the batch. */
  | 'window_moved'
  /** The compactor's state in Redis was lost: rebuild the windows from turns.l0. */
  | 'windows_lost';

/** Input from outside read by a tool or an adapter. */
export type InputErrorCode =
  /** The environment holds a value a service cannot run with (@tidemark/service). */
  | 'invalid_config'
  /** A transcript is not what its format reads (@tidemark/adapters, `tidemark ingest`). */
  | 'invalid_transcript'
  /** A ledger tool call whose name or arguments do not fit its schema (@tidemark/adapters). */
  | 'invalid_ledger_call'
  /** A scenario file that does not parse (@tidemark/scenarios). */
  | 'invalid_scenario';

/** The services' own conditions. */
export type ServiceErrorCode =
  /** The stack the environment names does not answer (the CLI's preflight). */
  | 'stack_unreachable'
  /** A resume could not be served because a dependency failed (Redis, Kafka, the registry). */
  | 'resume_unavailable'
  /** The validator's frame write was refused (a rebalance, a lost store): the batch is redelivered. */
  | 'frame_write_refused'
  /** The materialized state a summary needs was not there in time: the batch is redelivered. */
  | 'state_unavailable';

export type TidemarkErrorCode =
  CoreErrorCode | ContractErrorCode | StateErrorCode | InputErrorCode | ServiceErrorCode;

export interface TidemarkErrorOptions {
  /** Whether trying the same call again may succeed (default false: a bug or bad input). */
  readonly retriable?: boolean;
  readonly cause?: unknown;
}

export class TidemarkError<Code extends TidemarkErrorCode = TidemarkErrorCode> extends Error {
  override readonly name: string = 'TidemarkError';
  readonly code: Code;
  /** Whether trying the same call again may succeed (a timeout, a 503), as opposed to a bug or bad data. */
  readonly retriable: boolean;

  constructor(code: Code, message: string, options: TidemarkErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retriable = options.retriable ?? false;
  }
}

/** Whether an error is one Tidemark knows may pass if the same call is tried again. */
export function isRetriable(error: unknown): boolean {
  return error instanceof TidemarkError && error.retriable;
}

/** The core's errors: a precondition broken, a policy out of range, the model endpoint failing. */
export class TidemarkCoreError extends TidemarkError<CoreErrorCode> {
  override readonly name: string = 'TidemarkCoreError';
}

export function invalidInput(message: string): TidemarkCoreError {
  return new TidemarkCoreError('invalid_input', message);
}
