import { SchemaType } from '@kafkajs/confluent-schema-registry';
import { describe, expect, it } from 'vitest';
import { createTopic, kafkaClient, redisClient, schemaRegistry, uniqueName } from './infra/index.js';

// Proves the stack is real: each assertion depends on a live broker, registry or Redis.
describe('the local stack', () => {
  it('carries a registry-framed Avro record from a producer to a consumer in its own group', async () => {
    const topic = await createTopic('smoke');
    const registry = schemaRegistry();
    const schema = {
      type: 'record',
      name: 'Smoke',
      namespace: `tidemark.smoke.${uniqueName('s').replace('-', '_')}`,
      fields: [
        { name: 'id', type: 'string' },
        { name: 'n', type: 'long' },
      ],
    };
    const { id } = await registry.register(
      { type: SchemaType.AVRO, schema: JSON.stringify(schema) },
      { subject: `${topic}-value` },
    );
    const encoded = await registry.encode(id, { id: 'hello', n: 42 });
    // Confluent wire format: magic byte 0, then the 4-byte big-endian schema id.
    expect(encoded[0]).toBe(0);
    expect(encoded.readUInt32BE(1)).toBe(id);

    const kafka = kafkaClient();
    const producer = kafka.producer({ idempotent: true });
    await producer.connect();
    await producer.send({ topic, acks: -1, messages: [{ key: 'k', value: encoded }] });
    await producer.disconnect();

    const consumer = kafka.consumer({ groupId: uniqueName('smoke-group') });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const received = await new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no record within 30 s')), 30_000);
      void consumer.run({
        eachMessage: async ({ message }) => {
          clearTimeout(timer);
          resolve(await registry.decode(message.value!));
        },
      });
    });
    await consumer.disconnect();
    expect(received).toEqual({ id: 'hello', n: 42 });
  });

  it('answers through ioredis', async () => {
    const { redis, prefix } = redisClient();
    await redis.set(`${prefix}smoke`, 'tidemark');
    expect(await redis.get(`${prefix}smoke`)).toBe('tidemark');
    expect(await redis.ping()).toBe('PONG');
  });
});
