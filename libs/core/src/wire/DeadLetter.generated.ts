// Generated from schemas/*.avsc by `pnpm exec tsx schemas/codegen.ts`. Do not edit: change the schemas and regenerate.
// Wire shapes as the codec decodes them: longs as numbers, bytes as Uint8Array, nullable fields as
// T | null, unions of variant records as unions discriminated on `type`.

/**
 * An input a service could not process, kept with its original bytes and a reason code so that
 * nothing is dropped silently. Published to the deadletter topic; the service then carries on with
 * the next record.
 */
export interface DeadLetter {
  /** The topic the record was read from. */
  readonly originalTopic: string;
  /** The partition it was read from. */
  readonly partition: number;
  /** Its offset in that partition. */
  readonly offset: number;
  /** The record's key bytes as read; null when it had none. */
  readonly key: Uint8Array | null;
  /** The record's value bytes as read, registry framing included; null for a tombstone. */
  readonly value: Uint8Array | null;
  /**
   * not_avro: too short to carry the registry framing. wrong_magic_byte: the first byte is not 0.
   * unknown_schema_id: the registry does not know the schema id. unexpected_schema: a known schema,
   * but not the topic's record. decode_failed: the body does not decode under its schema.
   * empty_value: no value (a tombstone or zero bytes). missing_ids: a required id is empty.
   * invalid_event: a field is out of range (seq below 1, negative token count, superseded without
   * supersededBy, another session's turn). oversize: larger than the configured bound. seq_gap: a
   * seq past the next one. seq_duplicate_conflict and seq_regression: no longer written
   * (conflicting_redelivery replaced both); kept so that older dead letters still read.
   * conflicting_redelivery: a seq already applied, again with other content (the turn's content
   * hash, turnId and timestamp aside), whatever the turnId; the message has both hashes, and the
   * first turn is kept. unknown_item: a close for an item never opened. duplicate_item: an item id
   * opened twice. item_not_open: a close for an item that already ended.
   */
  readonly reason: DeadLetterReason;
  /** A human-readable account of what was wrong. */
  readonly message: string;
  /** The service that dead-lettered it (materializer, compactor, validator, resume). */
  readonly service: string;
  /**
   * When the service dead-lettered it, in milliseconds since the Unix epoch (UTC). Dead letters are
   * diagnostics, outside the deterministic outputs.
   */
  readonly observedAt: number;
}

/** Why an input could not be processed. A closed list: consumers may switch on it. */
export type DeadLetterReason = 'not_avro' | 'wrong_magic_byte' | 'unknown_schema_id' | 'unexpected_schema' | 'decode_failed' | 'empty_value' | 'missing_ids' | 'invalid_event' | 'oversize' | 'seq_gap' | 'seq_duplicate_conflict' | 'seq_regression' | 'unknown_item' | 'duplicate_item' | 'item_not_open' | 'conflicting_redelivery';

/** Every DeadLetterReason, in schema order. */
export const DeadLetterReasonSymbols: readonly DeadLetterReason[] = ['not_avro', 'wrong_magic_byte', 'unknown_schema_id', 'unexpected_schema', 'decode_failed', 'empty_value', 'missing_ids', 'invalid_event', 'oversize', 'seq_gap', 'seq_duplicate_conflict', 'seq_regression', 'unknown_item', 'duplicate_item', 'item_not_open', 'conflicting_redelivery'];
