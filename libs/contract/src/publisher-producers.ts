import { Partitioners, type RetryOptions } from 'kafkajs';
import type { Bus } from './bus.js';
import { BusProducer } from './producer.js';

// The kafkajs producers a publisher sends through (one at a time; a new one after a failed or timed-out
// send), and how a send stands at its deadline.

/**
 * kafkajs's own retry of one send (it was the client's: 8 retries, from 100 ms doubling up to 30 s):
 * at most 3 retries, 100 ms apart doubling to at most 1 s (≈ 0.7 s of waiting in all). An attempt may
 * itself wait for the client to reconnect (the Bus client's connection retries: 8, from 100 ms
 * doubling, ≈ 20–30 s) or for the broker's answer (a request times out after 30 s), so a send kafkajs
 * keeps trying ends within a minute or so, a few minutes at worst. The publisher does not wait for it:
 * at `timeoutMs` it gives the send up and goes on with a new producer (see TurnPublisher#send).
 */
const publisherSendRetry = {
  retries: 3,
  initialRetryTime: 100,
  maxRetryTime: 1_000,
} as const satisfies RetryOptions;

/** One kafkajs producer of the publisher's, and its connection (begun when it was made). */
export interface Slot {
  readonly producer: BusProducer;
  readonly connected: Promise<void>;
}

/** How a send stood at its deadline: an expected outcome, not an exception. */
export type SendOutcome =
  | { readonly status: 'sent' }
  | { readonly status: 'failed'; readonly error: unknown }
  | { readonly status: 'timed_out' };

/**
 * A kafkajs producer with the settings of the Bus's (idempotent, one request in flight, murmur2 over
 * the key, no topic creation; acks -1 on send) and a bounded retry. Not the Bus's own: that one is
 * shared and keeps the client's retry, and the publisher replaces its producer after a failed send.
 */
export function newSlot(bus: Bus): Slot {
  const client = bus.kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner,
    allowAutoTopicCreation: false,
    retry: publisherSendRetry,
  });
  client.on(client.events.REQUEST, (event) => bus.brokerAnswered(event.payload.broker));
  const producer = new BusProducer(bus, client, () => undefined);
  const connected = producer.connect();
  // Awaited by the first send (or by createPublisher); an unawaited failure is not unhandled.
  void connected.catch(() => undefined);
  return { producer, connected };
}

export function disconnect(slot: Slot): Promise<void> {
  return slot.producer.disconnect().catch(() => undefined);
}

/** Whether a send settled by a deadline; the send is not cancelled when it did not. */
export function settleBy(send: Promise<void>, deadline: number): Promise<SendOutcome> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ status: 'timed_out' }), Math.max(0, deadline - Date.now()));
    send.then(
      () => {
        clearTimeout(timer);
        resolve({ status: 'sent' });
      },
      (error: unknown) => {
        clearTimeout(timer);
        resolve({ status: 'failed', error });
      },
    );
  });
}
