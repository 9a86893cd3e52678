import type { ChainableCommander } from 'ioredis';
import { StateError } from './errors.js';

/**
 * Runs a pipeline (or a MULTI) and answers its replies in order, or throws a StateError: `redis` for a
 * command Redis refused (the original error as its cause), `pipeline_discarded` for a transaction that
 * did not run. Every store reads its round trips through this one door.
 */
export async function execAll(pipeline: ChainableCommander): Promise<unknown[]> {
  const results = await pipeline.exec();
  if (results === null) throw new StateError('pipeline_discarded', 'the Redis pipeline was discarded');
  return results.map(([error, value]) => {
    if (error !== null) throw new StateError('redis', error.message, { cause: error });
    return value;
  });
}

/** A script's reply the caller does not know: a bug on one side, never bad data. */
export function unexpectedReply(script: string, reply: unknown): StateError {
  return new StateError('unexpected_reply', `${script} answered ${JSON.stringify(reply)}`);
}
