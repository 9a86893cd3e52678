import { TidemarkError, type ContractErrorCode } from '@tidemark/core';

// The contract's unexpected failures: what a caller did wrong (sending an invalid event, a seq out of
// order) or what the infrastructure did (the registry unreachable). Expected outcomes (a record that does
// not decode, an event that does not validate) are values; they become dead letters. The codes are
// listed with every other in core's errors.ts.

export type { ContractErrorCode };

export class ContractError extends TidemarkError<ContractErrorCode> {
  override readonly name: string = 'ContractError';
}
