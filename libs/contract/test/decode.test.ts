import { describe, expect, it } from 'vitest';
import type { MarkerEmitted, TurnEvent } from '@tidemark/core';
import { decodeRecord, encodeBody, frame, type RawRecord, type RecordName } from '@tidemark/contract';
import type { WriterLookup } from '../src/registry.js';
import { lookupFor } from '../src/registry.js';
import avro from 'avsc';
import { rawSchemaOf } from '@tidemark/contract';
import { vectors } from './vectors.js';

// decodeRecord is the consumer's classification of one record; the registry is a function argument
// here (schema ids 1..5 map to our records, anything else is unknown), the integration tests use the
// real one.

const ids: Record<number, RecordName> = {
  1: 'TurnEvent',
  2: 'Compaction',
  3: 'MarkerEmitted',
  4: 'MarkerInvalid',
  5: 'DeadLetter',
};
const idOf = (record: RecordName) => Number(Object.entries(ids).find(([, r]) => r === record)![0]);
const lookup = (id: number): Promise<WriterLookup> => {
  const record = ids[id];
  return Promise.resolve(
    record === undefined
      ? { ok: false, reason: 'unknown_schema_id', message: `unknown ${id}` }
      : lookupFor(id, avro.Type.forSchema(rawSchemaOf(record))),
  );
};

const turn = vectors[0]!.value as TurnEvent;
const emitted = vectors.find((v) => v.name === 'marker-emitted')!.value as MarkerEmitted;
const key = Buffer.from('acme/migration-42');
const raw = (value: Buffer | null, k: Buffer | null = key): RawRecord => ({
  topic: 't',
  partition: 0,
  offset: 5,
  key: k,
  value,
});
const framed = (record: RecordName, value: unknown) => frame(idOf(record), encodeBody(record, value));

describe('decodeRecord', () => {
  it('decodes a valid turn to the core type', async () => {
    await expect(
      decodeRecord('turns', raw(framed('TurnEvent', turn)), lookup, 1 << 20),
    ).resolves.toStrictEqual({
      ok: true,
      value: turn,
    });
  });

  it.each([
    ['empty_value', raw(null)],
    ['empty_value', raw(Buffer.alloc(0))],
    ['not_avro', raw(Buffer.from('{}'))],
    ['wrong_magic_byte', raw(Buffer.from([7, 0, 0, 0, 1, 0]))],
    ['unknown_schema_id', raw(frame(99, encodeBody('TurnEvent', turn)))],
    ['unexpected_schema', raw(framed('MarkerEmitted', emitted))],
    ['decode_failed', raw(frame(1, Buffer.from([1, 2, 3])))],
    ['missing_ids', raw(framed('TurnEvent', { ...turn, turnId: '' }))],
    ['invalid_event', raw(framed('TurnEvent', { ...turn, seq: 0 }))],
    ['invalid_event', raw(framed('TurnEvent', turn), Buffer.from('acme/another-session'))],
    ['oversize', raw(framed('TurnEvent', { ...turn, content: 'x'.repeat(2048) }))],
  ])('classifies %s', async (reason, record) => {
    await expect(decodeRecord('turns', record, lookup, 1024)).resolves.toMatchObject({ ok: false, reason });
  });

  it('lets a markers topic carry both decisions and nothing else', async () => {
    const invalid = vectors.find((v) => v.name === 'marker-invalid')!.value;
    await expect(
      decodeRecord('markers', raw(framed('MarkerEmitted', emitted)), lookup, 1 << 20),
    ).resolves.toMatchObject({ ok: true });
    await expect(
      decodeRecord('markers', raw(framed('MarkerInvalid', invalid)), lookup, 1 << 20),
    ).resolves.toMatchObject({
      ok: true,
    });
    await expect(
      decodeRecord('markers', raw(framed('TurnEvent', turn)), lookup, 1 << 20),
    ).resolves.toMatchObject({
      ok: false,
      reason: 'unexpected_schema',
    });
  });

  it('throws, rather than dead-letters, when the registry cannot answer', async () => {
    const down = () => Promise.reject(new Error('ECONNREFUSED'));
    await expect(decodeRecord('turns', raw(framed('TurnEvent', turn)), down, 1 << 20)).rejects.toThrow(
      /ECONNREFUSED/,
    );
  });
});
