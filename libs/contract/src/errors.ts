// Unexpected failures of the contract: one small hierarchy with a closed list of codes. Expected outcomes
// (a record that does not decode, an event that does not validate) are values, never these; they become
// dead letters. A ContractError is what a caller did wrong (sending an invalid event, a seq out of
// order) or what the infrastructure did (the registry unreachable), and says whether trying again may help.

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

export class ContractError extends Error {
  override readonly name = 'ContractError';
  readonly code: ContractErrorCode;
  /** Whether trying the same call again may succeed (an unreachable registry), as opposed to bad input. */
  readonly retriable: boolean;

  constructor(
    code: ContractErrorCode,
    message: string,
    options: { retriable?: boolean; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retriable = options.retriable ?? false;
  }
}
