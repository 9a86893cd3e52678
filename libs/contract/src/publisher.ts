import { validateTurn, type TurnEvent } from '@tidemark/core';
import type { Logger } from 'pino';
import { Bus, type BusProducer, type EncodedMessage } from './bus.js';
import { ContractError } from './errors.js';
import { sessionKey, topicNames } from './topics.js';

// The publisher agent runtimes use to append turns to turns.l0: batched (a few ms of linger, or a full
// batch), ordered per session (one key, one partition, one send at a time), and strict about seqs so a
// runtime finds out at once, with the session named, instead of a materializer dead-lettering a gap.

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
  logger?: Logger;
  maxEventBytes?: number;
}

/** A turn as handed to the publisher: with `assignSeq`, its seq may be left out. */
export type PublishableTurn = Omit<TurnEvent, 'seq'> & { readonly seq?: number };

export interface Publisher {
  /** Appends one turn; resolves when it is durably written. Rejects at once (ContractError) if it is invalid. */
  publishTurn(turn: PublishableTurn): Promise<TurnEvent>;
  /** Appends turns in order; resolves when all are durably written. */
  publishTurns(turns: readonly PublishableTurn[]): Promise<TurnEvent[]>;
  /**
   * Tells the publisher where a session stands (its last published seq), for a runtime resuming a
   * session another process started. Otherwise the first turn of a session sets the baseline.
   */
  resumeSession(tenantId: string, sessionId: string, lastSeq: number): void;
  /** Sends whatever is waiting and resolves once everything published so far is durable. */
  flush(): Promise<void>;
  /** Flushes, then disconnects. */
  close(): Promise<void>;
}

interface Pending {
  readonly key: string;
  /** The session's epoch when the turn was accepted: a failed send starts a new one. */
  readonly epoch: number;
  readonly turn: TurnEvent;
  readonly message: EncodedMessage;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

export async function createPublisher(options: PublisherOptions): Promise<Publisher> {
  const bus = await Bus.connect({
    brokers: options.brokers,
    registryUrl: options.registryUrl,
    clientId: options.clientId,
    topics: topicNames(options.topicPrefix ?? ''),
    service: options.clientId,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.maxEventBytes === undefined ? {} : { maxEventBytes: options.maxEventBytes }),
  });
  const producer = await bus.busProducer();
  const schemaId = await bus.registry.idFor(bus.topics.turns, 'TurnEvent');
  return new TurnPublisher(bus, producer, schemaId, options);
}

class TurnPublisher implements Publisher {
  readonly #bus: Bus;
  readonly #producer: BusProducer;
  readonly #schemaId: number;
  readonly #lingerMs: number;
  readonly #maxBatchTurns: number;
  readonly #assignSeq: boolean;
  /** The last seq accepted per session key (accepted: validated and queued, maybe not yet durable). */
  readonly #lastSeq = new Map<string, number>();
  /** Per session, how many of its sends failed: turns accepted before a failure are not sent after it. */
  readonly #epochs = new Map<string, number>();
  #queue: Pending[] = [];
  #timer: NodeJS.Timeout | null = null;
  /** Batches go out one at a time, in order, so a session's turns cannot overtake each other. */
  #sending: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(bus: Bus, producer: BusProducer, schemaId: number, options: PublisherOptions) {
    this.#bus = bus;
    this.#producer = producer;
    this.#schemaId = schemaId;
    this.#lingerMs = options.lingerMs ?? 5;
    this.#maxBatchTurns = options.maxBatchTurns ?? 500;
    this.#assignSeq = options.assignSeq ?? false;
  }

  resumeSession(tenantId: string, sessionId: string, lastSeq: number): void {
    if (!Number.isSafeInteger(lastSeq) || lastSeq < 0) {
      throw new ContractError(
        'invalid_event',
        `lastSeq ${lastSeq} of ${tenantId}/${sessionId} is not an integer ≥ 0`,
      );
    }
    this.#lastSeq.set(sessionKey(tenantId, sessionId), lastSeq);
  }

  async publishTurn(input: PublishableTurn): Promise<TurnEvent> {
    const [turn] = await this.publishTurns([input]);
    return turn as TurnEvent;
  }

  async publishTurns(inputs: readonly PublishableTurn[]): Promise<TurnEvent[]> {
    if (this.#closed) throw new ContractError('closed', 'the publisher is closed');
    // Check, sequence and encode every turn before queueing any, so a bad turn rejects the call and
    // sends nothing. All of it is synchronous up to the queue: concurrent calls cannot interleave
    // between a session's seq check and its place in the queue.
    const accepted: { turn: TurnEvent; message: EncodedMessage }[] = [];
    const seqs = new Map<string, number | undefined>();
    const lastOf = (key: string) => (seqs.has(key) ? seqs.get(key) : this.#lastSeq.get(key));
    for (const input of inputs) {
      const key = sessionKey(input.tenantId, input.sessionId);
      const last = lastOf(key);
      const turn = this.#sequenced(input, last);
      const validation = validateTurn(turn);
      if (!validation.ok) {
        throw new ContractError(
          'invalid_event',
          `turn ${turn.seq} of ${key} (turnId ${JSON.stringify(turn.turnId)}): ${validation.reason}: ${validation.message}`,
        );
      }
      accepted.push({ turn, message: this.#producer.encodeWith(this.#schemaId, 'turns', turn) });
      seqs.set(key, turn.seq);
    }
    for (const [key, seq] of seqs) if (seq !== undefined) this.#lastSeq.set(key, seq);
    const done = accepted.map(({ turn, message }) => {
      const key = sessionKey(turn.tenantId, turn.sessionId);
      const epoch = this.#epochs.get(key) ?? 0;
      return new Promise<void>((resolve, reject) => {
        this.#queue.push({ key, epoch, turn, message, resolve, reject });
      });
    });
    if (this.#queue.length >= this.#maxBatchTurns) this.#sendNow();
    else this.#timer ??= setTimeout(() => this.#sendNow(), this.#lingerMs);
    await Promise.all(done);
    return accepted.map((a) => a.turn);
  }

  #sequenced(input: PublishableTurn, last: number | undefined): TurnEvent {
    const key = sessionKey(input.tenantId, input.sessionId);
    if (this.#assignSeq) return { ...input, seq: (last ?? 0) + 1 };
    const seq = input.seq;
    if (seq === undefined) {
      throw new ContractError(
        'invalid_event',
        `a turn of ${key} has no seq (and the publisher does not assign seqs)`,
      );
    }
    // The first turn of a session this publisher sees sets the baseline (a runtime may resume mid-session).
    if (last !== undefined && seq !== last + 1) {
      throw new ContractError(
        'seq_out_of_order',
        `tenant ${input.tenantId} session ${input.sessionId}: expected seq ${last + 1}, got ${seq}`,
      );
    }
    return { ...input, seq };
  }

  #sendNow(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#queue.length === 0) return;
    const queued = this.#queue;
    this.#queue = [];
    this.#sending = this.#sending.then(() => this.#send(queued));
  }

  async #send(queued: readonly Pending[]): Promise<void> {
    // A turn accepted before an earlier send of its session failed is not sent: it would land after a
    // hole in the session's seqs. The runtime republishes from its last durable turn.
    const batch: Pending[] = [];
    for (const p of queued) {
      if (p.epoch === (this.#epochs.get(p.key) ?? 0)) batch.push(p);
      else
        p.reject(
          new ContractError(
            'send_failed',
            `turn ${p.turn.seq} of ${p.key} was not sent: an earlier send of its session failed`,
            { retriable: true },
          ),
        );
    }
    if (batch.length === 0) return;
    try {
      await this.#producer.sendEncoded(
        'turns',
        batch.map((p) => p.message),
      );
      for (const p of batch) p.resolve();
    } catch (error) {
      // What reached the broker is unknown: forget these sessions' seqs, so the runtime's next turn sets
      // a new baseline instead of being refused against a seq that may not exist.
      for (const p of batch) {
        this.#lastSeq.delete(p.key);
        this.#epochs.set(p.key, p.epoch + 1);
      }
      const failure = new ContractError(
        'send_failed',
        `sending ${batch.length} turn(s) failed: ${(error as Error).message}`,
        {
          retriable: true,
          cause: error,
        },
      );
      for (const p of batch) p.reject(failure);
    }
  }

  async flush(): Promise<void> {
    this.#sendNow();
    await this.#sending;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    await this.flush();
    this.#closed = true;
    await this.#bus.disconnect();
  }
}
