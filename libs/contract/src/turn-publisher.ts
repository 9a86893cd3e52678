import { validateTurn, type TurnEvent } from '@tidemark/core';
import type { Bus } from './bus.js';
import { ContractError } from './errors.js';
import type { BusProducer, EncodedMessage } from './producer.js';
import { disconnect, newSlot, settleBy, type Slot } from './publisher-producers.js';
import type { PublishableTurn, Publisher, PublisherOptions } from './publisher.js';
import { sessionKey } from './topics.js';

// The publisher's machinery: calls queued per send, seqs checked (or assigned) per session, one send at a
// time on a kafkajs producer, and each call settled by its deadline (see publisher.ts for the contract).

/** Where a session of a call stood when the call was accepted. */
interface CallSession {
  readonly key: string;
  /** The session's epoch: every failed or timed-out call of a session starts a new one. */
  readonly epoch: number;
  /** The call's first seq in the session: a failed call rolls the session back to just before it. */
  readonly firstSeq: number;
}

/** One publishTurns call, queued: its turns always go out in the same send, and it settles as a whole. */
interface Call {
  readonly turns: readonly TurnEvent[];
  readonly messages: readonly EncodedMessage[];
  readonly sessions: readonly CallSession[];
  /** When it rejects with send_timeout unless acknowledged (Date.now() time). */
  readonly deadline: number;
  readonly resolve: () => void;
  readonly reject: (error: ContractError) => void;
}

export class TurnPublisher implements Publisher {
  readonly #bus: Bus;
  readonly #schemaId: number;
  readonly #lingerMs: number;
  readonly #maxBatchTurns: number;
  readonly #assignSeq: boolean;
  readonly #timeoutMs: number;
  /** The last seq accepted per session key (accepted: validated and queued, maybe not yet durable). */
  readonly #lastSeq = new Map<string, number>();
  /** Per session, how many of its calls failed: a call accepted before a failure is not sent after it. */
  readonly #epochs = new Map<string, number>();
  /** Encodes turns (`encodeWith` uses the Bus's registry ids and bounds, not the producer's connection). */
  readonly #encoder: BusProducer;
  /** The producer sends go through; after a failed or timed-out send, a new one (null until needed). */
  #slot: Slot | null;
  /** Producers given up on with a send still in flight: each is disconnected once its send settles. */
  readonly #retired = new Set<Slot>();
  #queue: Call[] = [];
  #queuedTurns = 0;
  #timer: NodeJS.Timeout | null = null;
  /** Sends go out one at a time, in order, so a session's turns cannot overtake each other. */
  #sending: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(bus: Bus, schemaId: number, options: PublisherOptions & { timeoutMs: number }) {
    this.#bus = bus;
    this.#schemaId = schemaId;
    this.#lingerMs = options.lingerMs ?? 5;
    this.#maxBatchTurns = options.maxBatchTurns ?? 500;
    this.#assignSeq = options.assignSeq ?? false;
    this.#timeoutMs = options.timeoutMs;
    this.#slot = newSlot(this.#bus);
    this.#encoder = this.#slot.producer;
  }

  /** Resolves once the first producer is connected. */
  async connected(): Promise<void> {
    await this.#slot?.connected;
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
    const turns: TurnEvent[] = [];
    const messages: EncodedMessage[] = [];
    const seqs = new Map<string, number>();
    const sessions = new Map<string, CallSession>();
    for (const input of inputs) {
      const key = sessionKey(input.tenantId, input.sessionId);
      const turn = this.#sequenced(input, seqs.get(key) ?? this.#lastSeq.get(key));
      const validation = validateTurn(turn);
      if (!validation.ok) {
        throw new ContractError(
          'invalid_event',
          `turn ${turn.seq} of ${key} (turnId ${JSON.stringify(turn.turnId)}): ${validation.reason}: ${validation.message}`,
        );
      }
      messages.push(this.#encoder.encodeWith(this.#schemaId, 'turns', turn));
      turns.push(turn);
      seqs.set(key, turn.seq);
      if (!sessions.has(key))
        sessions.set(key, { key, epoch: this.#epochs.get(key) ?? 0, firstSeq: turn.seq });
    }
    if (turns.length === 0) return [];
    for (const [key, seq] of seqs) this.#lastSeq.set(key, seq);
    const deadline = Date.now() + this.#timeoutMs;
    const done = new Promise<void>((resolve, reject) => {
      this.#queue.push({ turns, messages, sessions: [...sessions.values()], deadline, resolve, reject });
    });
    this.#queuedTurns += turns.length;
    if (this.#queuedTurns >= this.#maxBatchTurns) this.#sendNow();
    else this.#timer ??= setTimeout(() => this.#sendNow(), this.#lingerMs);
    await done;
    return turns;
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
    this.#queuedTurns = 0;
    this.#sending = this.#sending.then(() => this.#send(queued));
  }

  async #send(queued: readonly Call[]): Promise<void> {
    // A call accepted before an earlier call of one of its sessions failed is not sent: it would land
    // after a hole in the session's seqs. The runtime republishes from the failed call on.
    const batch: Call[] = [];
    for (const call of queued) {
      const stale = call.sessions.find((s) => s.epoch !== (this.#epochs.get(s.key) ?? 0));
      if (stale !== undefined) {
        this.#fail(
          call,
          new ContractError(
            'send_failed',
            `${describe(call)} not sent: an earlier send of ${stale.key} failed or timed out. ${republish}`,
            { retriable: true },
          ),
        );
      } else if (call.deadline <= Date.now()) {
        this.#fail(call, this.#timedOut(call, 'not sent'));
      } else {
        batch.push(call);
      }
    }
    if (batch.length === 0) return;
    const slot = (this.#slot ??= newSlot(this.#bus));
    const send = slot.connected.then(() =>
      slot.producer.sendEncoded(
        'turns',
        batch.flatMap((call) => call.messages),
      ),
    );
    // The batch's earliest deadline bounds the send: past it, the send is given up on (its calls
    // rejected), and the next batch goes out, on a new producer.
    const outcome = await settleBy(send, Math.min(...batch.map((call) => call.deadline)));
    if (outcome.status === 'sent') {
      for (const call of batch) call.resolve();
      return;
    }
    // What reached the broker is unknown. The producer is not used again: a kafkajs send it still
    // retries (or a sequence number it rolled back) cannot collide with the next send's, which goes
    // out on a new producer (a new producer id) without waiting for it. It is disconnected once its
    // send settles (within publisherSendRetry's bound, publisher-producers.ts); a late write is a duplicate of the republish.
    this.#retire(slot, send);
    for (const call of batch) {
      this.#fail(
        call,
        outcome.status === 'timed_out'
          ? this.#timedOut(call, 'sent')
          : new ContractError(
              'send_failed',
              `sending ${describe(call)} failed: ${(outcome.error as Error).message}. ${republish}`,
              { retriable: true, cause: outcome.error },
            ),
      );
    }
  }

  #timedOut(call: Call, was: 'sent' | 'not sent'): ContractError {
    const what =
      was === 'sent'
        ? 'whether they reached the broker is unknown'
        : 'they were not sent (the sends before them took that long)';
    return new ContractError(
      'send_timeout',
      `${describe(call)} not acknowledged within ${this.#timeoutMs} ms (timeoutMs); ${what}. ${republish}`,
      { retriable: true },
    );
  }

  /**
   * Rejects a call, first rolling each of its sessions back to just before it (once per epoch: a later
   * call of an already rolled-back session leaves it where the earliest failed call put it), so the
   * same turns can be published again: with their seqs, or given the same seqs with `assignSeq`.
   */
  #fail(call: Call, error: ContractError): void {
    for (const { key, epoch, firstSeq } of call.sessions) {
      if ((this.#epochs.get(key) ?? 0) !== epoch) continue;
      this.#epochs.set(key, epoch + 1);
      this.#lastSeq.set(key, firstSeq - 1);
    }
    call.reject(error);
  }

  #retire(slot: Slot, send: Promise<void>): void {
    if (this.#slot === slot) this.#slot = null;
    this.#retired.add(slot);
    void send
      .catch(() => undefined)
      .then(() => disconnect(slot))
      .finally(() => this.#retired.delete(slot));
  }

  async flush(): Promise<void> {
    this.#sendNow();
    await this.#sending;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    await this.flush();
    this.#closed = true;
    const slots = [...this.#retired, ...(this.#slot === null ? [] : [this.#slot])];
    this.#slot = null;
    // A retired producer still retrying is disconnected now, and again when its send settles.
    await Promise.all(slots.map(disconnect));
    await this.#bus.disconnect();
  }
}

const republish =
  'Republish the same turns (same seqs, same content): a turn already stored is a harmless redelivery; other content at a stored seq is dead-lettered as conflicting_redelivery.';

function describe(call: Call): string {
  const sessions = call.sessions.map((s) => `${s.key} from seq ${s.firstSeq}`).join(', ');
  return `${call.turns.length} turn(s) of ${sessions}`;
}
