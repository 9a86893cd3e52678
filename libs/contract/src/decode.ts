import type { DeadLetterReason } from '@tidemark/core';
import { allowedOn, unframe } from './codec.js';
import type { WriterLookup } from './registry.js';
import type { EventsByRole, TopicRole } from './topics.js';
import { expectedKey, validateEvent } from './validate.js';

// How one record read off a topic becomes an event of its role, or a dead-letter reason. Every step that
// can fail on bad input answers with a reason code; only an unreachable registry throws (the batch is
// then retried, never dead-lettered for the registry's fault).

/** A record as read from Kafka. */
export interface RawRecord {
  topic: string;
  partition: number;
  offset: number;
  key: Buffer | null;
  value: Buffer | null;
  /** The record's Kafka timestamp (epoch ms), when read off a topic (latency metrics). */
  timestamp?: number;
}

/** A record that decoded and validated. */
export interface DecodedRecord<E> {
  raw: RawRecord;
  value: E;
}

/** The reasons the contract itself dead-letters a record for (the rest are the services'). */
export type DecodeFailureReason = Extract<
  DeadLetterReason,
  | 'not_avro'
  | 'wrong_magic_byte'
  | 'unknown_schema_id'
  | 'unexpected_schema'
  | 'decode_failed'
  | 'empty_value'
  | 'missing_ids'
  | 'invalid_event'
  | 'oversize'
>;

export type DecodeOutcome<E> =
  | { readonly ok: true; readonly value: E }
  | { readonly ok: false; readonly reason: DecodeFailureReason; readonly message: string };

export async function decodeRecord<R extends TopicRole>(
  role: R,
  raw: RawRecord,
  lookup: (schemaId: number) => Promise<WriterLookup>,
  maxEventBytes: number,
): Promise<DecodeOutcome<EventsByRole[R]>> {
  const size = (raw.key?.length ?? 0) + (raw.value?.length ?? 0);
  if (size > maxEventBytes) {
    return { ok: false, reason: 'oversize', message: `${size} bytes, over the bound of ${maxEventBytes}` };
  }
  const framed = unframe(raw.value);
  if (!framed.ok) return framed;
  const writer = await lookup(framed.schemaId);
  if (!writer.ok) return writer;
  if (!allowedOn(role, writer.record)) {
    return {
      ok: false,
      reason: 'unexpected_schema',
      message: `schema id ${framed.schemaId} is ${writer.record}, which the ${role} topic does not carry`,
    };
  }
  let value: EventsByRole[R];
  try {
    value = writer.decode(framed.body) as EventsByRole[R];
  } catch (error) {
    return {
      ok: false,
      reason: 'decode_failed',
      message: `the body does not decode as ${writer.record} (schema id ${framed.schemaId}): ${(error as Error).message}`,
    };
  }
  const validation = validateEvent(role, value);
  if (!validation.ok) return validation;
  const expected = expectedKey(role, value);
  const actual = raw.key === null ? null : raw.key.toString('utf8');
  if (role !== 'deadletter' && actual !== expected) {
    return {
      ok: false,
      reason: 'invalid_event',
      message: `keyed ${JSON.stringify(actual)}, but its session's key is ${JSON.stringify(expected)}`,
    };
  }
  return { ok: true, value };
}
