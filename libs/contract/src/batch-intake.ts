import type { DeadLetterReason } from '@tidemark/core';
import type { Batch } from 'kafkajs';
import type { Logger } from 'pino';
import { decodeRecord, type DecodedRecord, type RawRecord } from './decode.js';
import { boundFor, deadLetterOf, type BusProducer } from './producer.js';
import type { Registry } from './registry.js';
import { deadLetterOwners, type EventsByRole, type TopicRole } from './topics.js';

// A fetched batch as the consumer takes it in: every record decoded and validated for its topic's role
// (good ones in offset order, bad ones with their reason), and the bad ones dead-lettered by the topic's
// owner only (deadLetterOwners), so that each bad record is dead-lettered once however many read it.

export interface BadRecord {
  readonly record: RawRecord;
  readonly reason: DeadLetterReason;
  readonly message: string;
}

/** What dead-lettering needs of the bus. */
export interface DeadLetterHost {
  readonly service: string;
  readonly logger: Logger | undefined;
  busProducer(): Promise<BusProducer>;
}

/** Decodes a batch: its good records in offset order, and its bad ones. Throws only when the registry is away. */
export async function decodeBatch<R extends TopicRole>(
  role: R,
  batch: Batch,
  registry: Registry,
  maxEventBytes: number,
): Promise<{ valid: DecodedRecord<EventsByRole[R]>[]; dead: BadRecord[] }> {
  const valid: DecodedRecord<EventsByRole[R]>[] = [];
  const dead: BadRecord[] = [];
  const lookup = (id: number) => registry.writer(id);
  for (const message of batch.messages) {
    const raw: RawRecord = {
      topic: batch.topic,
      partition: batch.partition,
      offset: Number(message.offset),
      key: message.key ?? null,
      value: message.value ?? null,
      timestamp: Number(message.timestamp),
    };
    // Throws only when the registry cannot be reached: the batch is then retried, not dead-lettered.
    const outcome = await decodeRecord(role, raw, lookup, boundFor(role, maxEventBytes));
    if (outcome.ok) valid.push({ raw, value: outcome.value });
    else dead.push({ record: raw, reason: outcome.reason, message: outcome.message });
  }
  return { valid, dead };
}

/**
 * Dead-letters a batch's bad records, when this reader owns the topic (or `publish` says so), in one
 * send; every reader tells `onDeadLetter` of each. A non-owner logs at debug: the owner tells the story.
 */
export async function deadLetter(
  host: DeadLetterHost,
  role: TopicRole,
  dead: readonly BadRecord[],
  options: {
    readonly publish?: boolean;
    readonly onDeadLetter?: (record: RawRecord, reason: DeadLetterReason, message: string) => void;
  },
): Promise<void> {
  if (dead.length === 0) return;
  const owner = options.publish ?? deadLetterOwners[role] === host.service;
  if (owner) {
    const producer = await host.busProducer();
    const messages = [];
    for (const d of dead) {
      messages.push(
        await producer.encode('deadletter', deadLetterOf(d.record, d.reason, d.message, host.service)),
      );
    }
    await producer.sendEncoded('deadletter', messages);
  }
  for (const d of dead) {
    const where = {
      topic: d.record.topic,
      partition: d.record.partition,
      offset: d.record.offset,
      reason: d.reason,
    };
    if (owner) host.logger?.warn(where, `dead-lettered: ${d.message}`);
    else
      host.logger?.debug(
        where,
        `skipped (dead-lettered by ${deadLetterOwners[role] ?? 'nobody'}): ${d.message}`,
      );
    options.onDeadLetter?.(d.record, d.reason, d.message);
  }
}
