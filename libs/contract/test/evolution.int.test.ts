import { readFileSync } from 'node:fs';
import { COMPATIBILITY, SchemaType } from '@kafkajs/confluent-schema-registry';
import { describe, expect, it } from 'vitest';
import type { TurnEvent } from '@tidemark/core';
import { frame, rawSchemaOf, sessionKey, subjectOf, typeOf, type DecodedRecord } from '@tidemark/contract';
import { kafkaClient, schemaRegistry, uniqueName } from '@tidemark/test-infra';
import { connectBus, eventually, isolatedTopics } from './helpers.js';
import { vectors, vectorsDir } from './vectors.js';

// Schema evolution against the real registry: subjects are BACKWARD compatible, so a reader on the new
// schema can read everything written with the old one. Throwaway subjects keep the real ones untouched.

type Field = { name: string; type: unknown; default?: unknown; doc?: string };
const turnSchema = () => rawSchemaOf('TurnEvent') as unknown as { fields: Field[] };
const register = (subject: string, schema: object) =>
  schemaRegistry().register(
    { type: SchemaType.AVRO, schema: JSON.stringify(schema) },
    { subject, compatibility: COMPATIBILITY.BACKWARD },
  );

describe('schema evolution', () => {
  it('accepts a new optional field with a default and refuses incompatible changes with 409', async () => {
    const subject = `${uniqueName('evolution')}-tidemark.v1.TurnEvent`;
    const v1 = await register(subject, turnSchema());
    // Idempotent: the same schema again is the same id.
    expect((await register(subject, turnSchema())).id).toBe(v1.id);

    const v2 = turnSchema();
    v2.fields.push({
      name: 'model',
      type: ['null', 'string'],
      default: null,
      doc: 'The model that ran the turn.',
    });
    const accepted = await register(subject, v2);
    expect(accepted.id).not.toBe(v1.id);

    const retyped = turnSchema();
    retyped.fields.find((f) => f.name === 'seq')!.type = 'string';
    await expect(register(subject, retyped)).rejects.toMatchObject({ status: 409 });

    const required = turnSchema();
    required.fields.push({ name: 'runtime', type: 'string', doc: 'A new field without a default.' });
    await expect(register(subject, required)).rejects.toMatchObject({ status: 409 });
  });

  it('accepts TurnEvent with `original` over the schema before it (the registry checks BACKWARD)', async () => {
    const subject = `${uniqueName('evolution')}-tidemark.v1.TurnEvent`;
    const before = JSON.parse(readFileSync(`${vectorsDir}turn-event-v1.avsc`, 'utf8')) as object;
    const v1 = await register(subject, before);
    const current = await register(subject, turnSchema());
    expect(current.id).not.toBe(v1.id);
  });

  it('reads a record written with a newer compatible schema as the core type', async () => {
    const topics = await isolatedTopics(1);
    const bus = await connectBus(topics);
    const v2 = turnSchema();
    v2.fields.push({
      name: 'model',
      type: ['null', 'string'],
      default: null,
      doc: 'The model that ran the turn.',
    });
    // The newer writer registers v2 under the real subject of this (isolated) turns topic.
    const { id } = await register(subjectOf(topics.turns, 'TurnEvent'), v2);
    const turn = vectors[0]!.value as TurnEvent;
    const producer = kafkaClient().producer();
    await producer.connect();
    await producer.send({
      topic: topics.turns,
      acks: -1,
      messages: [
        {
          key: sessionKey(turn.tenantId, turn.sessionId),
          value: frame(id, typeOf(v2 as never).toBuffer({ ...turn, model: 'gpt-x' })),
        },
      ],
    });
    await producer.disconnect();
    const received: DecodedRecord<TurnEvent>[] = [];
    const consumer = bus.consumer({
      groupId: uniqueName('g'),
      role: 'turns',
      onBatch: (records) => {
        received.push(...records);
        return Promise.resolve();
      },
    });
    await consumer.run();
    await eventually(
      () => received.length,
      (n) => n === 1,
    );
    expect(received[0]!.value).toStrictEqual(turn);
  });
});
