// The benches' load: the sessions of `generateWorkload`, randomly interleaved, and the L0 records they
// become on the wire, offered in chunks (paced or as fast as the sender takes them).
import { encodeBody, frame, sessionKey } from '../libs/contract/src/index.js';
import { seededRandom, type TurnEvent } from '../libs/core/src/index.js';
import { generateWorkload } from '../libs/scenarios/src/index.js';

/** One L0 record as the publisher sends it: the session key and the registry-framed Avro body. */
export interface Message {
  readonly key: string;
  readonly value: Buffer;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface Workload {
  /** Each session's turns, in order. */
  readonly sessions: readonly (readonly TurnEvent[])[];
  /** Every turn, sessions randomly interleaved (seeded), each session's turns in order. */
  readonly interleaved: readonly TurnEvent[];
}

/**
 * `generateWorkload` sessions of one tenant. Sessions run concurrently in real use: their turns are
 * offered randomly interleaved (each session's in order). Not round-robin: that brings every session to a
 * compaction boundary at the same moment.
 */
export function interleavedWorkload(options: {
  tenantId: string;
  sessions: number;
  turns: number;
  seed: number;
}): Workload {
  const sessions = generateWorkload(options);
  const order = sessions.flatMap((_, index) => Array<number>(options.turns).fill(index));
  const random = seededRandom(options.seed);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const next = sessions.map(() => 0);
  return { sessions, interleaved: order.map((index) => sessions[index]![next[index]!++]!) };
}

/** The very bytes and keys the publisher sends for these turns (registry-framed Avro, TurnEvent schema id). */
export function l0Records(turns: readonly TurnEvent[], schemaId: number): Message[] {
  return turns.map((turn) => ({
    key: sessionKey(turn.tenantId, turn.sessionId),
    value: frame(schemaId, encodeBody('TurnEvent', turn)),
  }));
}

export const meanRecordBytes = (messages: readonly Message[]) =>
  messages.reduce((sum, m) => sum + m.key.length + m.value.length, 0) / messages.length;

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/**
 * Offers `total` items in chunks of `chunk`: back to back when `rate` is 0 (the sender's own
 * back-pressure decides), else one chunk every 50 ms at `rate` items/s. Resolves when every send has
 * resolved.
 */
export async function offer(
  total: number,
  send: (from: number, to: number) => Promise<unknown>,
  { rate = 0, chunk = 500 }: { rate?: number; chunk?: number } = {},
): Promise<void> {
  const sends: Promise<unknown>[] = [];
  if (rate === 0) {
    for (let from = 0; from < total; from += chunk) {
      sends.push(send(from, Math.min(total, from + chunk)));
      // Yield between chunks: the publisher encodes a chunk synchronously, and encoding every turn in
      // one tick would hold the event loop (and every service in it) for about a second.
      await new Promise((resolve) => setImmediate(resolve));
    }
  } else {
    const paced = Math.max(1, Math.round(rate / 20));
    const began = performance.now();
    for (let from = 0; from < total; from += paced) {
      const due = began + (from / rate) * 1000;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      sends.push(send(from, Math.min(total, from + paced)));
    }
  }
  await Promise.all(sends);
}
