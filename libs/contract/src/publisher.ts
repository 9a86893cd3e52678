import type { TurnEvent } from '@tidemark/core';
import type { Logger } from 'pino';
import { Bus } from './bus.js';
import { topicNames } from './topics.js';
import { TurnPublisher } from './turn-publisher.js';

// The publisher agent runtimes use to append turns to turns.l0: batched (a few ms of linger, or a full
// batch), ordered per session (one key, one partition, one send at a time), strict about seqs so a
// runtime finds out at once, with the session named, instead of a materializer dead-lettering a gap,
// and bounded in time: a publish resolves or rejects within `timeoutMs`.

/** PublisherOptions.timeoutMs when it is not given. */
export const defaultPublishTimeoutMs = 30_000;
/** The longest a timer can wait (setTimeout fires at once past it). */
const maxTimeoutMs = 2_147_483_647;

export interface PublisherOptions {
  brokers: string[];
  registryUrl: string;
  clientId: string;
  /** Prefix of the topic names (TOPIC_PREFIX). Default ''. */
  topicPrefix?: string;
  /** How long a turn waits for others to share its send. Default 5 ms. */
  lingerMs?: number;
  /** A batch is sent at once when it holds this many turns. Default 500. */
  maxBatchTurns?: number;
  /** Assign each turn the session's next seq (starting at 1, or after `resumeSession`) instead of checking it. */
  assignSeq?: boolean;
  /**
   * How long a publish may take, from the call to the broker's acknowledgement (linger, waiting for the
   * send before it, and kafkajs's retries included): the publisher's whole retry window. Past it, the
   * call rejects with a retriable ContractError `send_timeout`, and the runtime republishes the same
   * turns. A whole number of milliseconds, 1 to 2^31 − 1. Default 30 000 (`defaultPublishTimeoutMs`).
   */
  timeoutMs?: number;
  logger?: Logger;
  maxEventBytes?: number;
}

/** A turn as handed to the publisher: with `assignSeq`, its seq may be left out. */
export type PublishableTurn = Omit<TurnEvent, 'seq'> & { readonly seq?: number };

export interface Publisher {
  /**
   * Appends one turn; resolves when it is durably written. Rejects at once (ContractError) if it is
   * invalid, and within `timeoutMs` otherwise (retriable `send_failed` or `send_timeout`: republish).
   */
  publishTurn(turn: PublishableTurn): Promise<TurnEvent>;
  /** Appends turns in order; resolves when all are durably written. Rejects as `publishTurn` does, for all of them. */
  publishTurns(turns: readonly PublishableTurn[]): Promise<TurnEvent[]>;
  /**
   * Tells the publisher where a session stands (its last published seq), for a runtime resuming a
   * session another process started. Otherwise the first turn of a session sets the baseline.
   */
  resumeSession(tenantId: string, sessionId: string, lastSeq: number): void;
  /** Sends whatever is waiting and resolves once it is durable, failed or timed out (within `timeoutMs`). */
  flush(): Promise<void>;
  /** Flushes, then disconnects. */
  close(): Promise<void>;
}

export async function createPublisher(options: PublisherOptions): Promise<Publisher> {
  const timeoutMs = options.timeoutMs ?? defaultPublishTimeoutMs;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > maxTimeoutMs) {
    throw new RangeError(
      `PublisherOptions.timeoutMs must be a whole number of milliseconds from 1 to ${maxTimeoutMs}, got ${String(options.timeoutMs)}`,
    );
  }
  const bus = await Bus.connect({
    brokers: options.brokers,
    registryUrl: options.registryUrl,
    clientId: options.clientId,
    topics: topicNames(options.topicPrefix ?? ''),
    service: options.clientId,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.maxEventBytes === undefined ? {} : { maxEventBytes: options.maxEventBytes }),
  });
  const schemaId = await bus.registry.idFor(bus.topics.turns, 'TurnEvent');
  const publisher = new TurnPublisher(bus, schemaId, { ...options, timeoutMs });
  try {
    // Connected at creation, as before: a wrong address fails here, not at the first turn.
    await publisher.connected();
  } catch (error) {
    await publisher.close().catch(() => undefined);
    throw error;
  }
  return publisher;
}
