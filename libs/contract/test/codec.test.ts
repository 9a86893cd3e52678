import { readFileSync } from 'node:fs';
import avro from 'avsc';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { generateSession, type Compaction, type DeadLetter, type TurnEvent } from '@tidemark/core';
import {
  ContractError,
  decodeBody,
  encodeBody,
  frame,
  localType,
  rawSchemaOf,
  typeOf,
  unframe,
  type RecordName,
} from '@tidemark/contract';
import { lookupFor } from '../src/registry.js';
import { fromJson, readVector, toJson, vectors, vectorsDir } from './vectors.js';

describe('the wire-format vectors in schemas/vectors', () => {
  for (const { name, record, value } of vectors) {
    it(`encodes ${name}.json as exactly ${name}.bin and decodes it back (${record})`, () => {
      const { json, bin } = readVector(name);
      const fromFile = fromJson(json);
      // The checked-in JSON is what the generator writes (else run `pnpm --filter @tidemark/contract vectors`).
      expect(fromFile).toStrictEqual(fromJson(toJson(value)));
      expect(encodeBody(record, fromFile).equals(bin)).toBe(true);
      expect(decodeBody(record, bin)).toStrictEqual(fromFile);
    });
  }

  it('reads a TurnEvent written before `original` existed, with the schema it was written with (BACKWARD)', () => {
    const writer = typeOf(JSON.parse(readFileSync(`${vectorsDir}turn-event-v1.avsc`, 'utf8')) as never);
    const reader = localType('TurnEvent');
    const bin = readFileSync(`${vectorsDir}turn-event-v1.bin`);
    const decoded = reader.fromBuffer(bin, reader.createResolver(writer)) as TurnEvent;
    const current = vectors.find((v) => v.name === 'turn-event')!.value as TurnEvent;
    expect(decoded).toStrictEqual(fromJson(toJson({ ...current, original: null })));
    // A value without `original` (a runtime built before it) encodes as if it were null.
    const { original: _original, ...withoutOriginal } = current;
    expect(encodeBody('TurnEvent', withoutOriginal).equals(encodeBody('TurnEvent', current))).toBe(true);
  });

  it('reads a Compaction written before claims carried names, details and handles (BACKWARD)', () => {
    const writer = typeOf(JSON.parse(readFileSync(`${vectorsDir}compaction-v1.avsc`, 'utf8')) as never);
    const reader = localType('Compaction');
    const bin = readFileSync(`${vectorsDir}compaction-v1.bin`);
    const decoded = reader.fromBuffer(bin, reader.createResolver(writer)) as Compaction;
    const current = vectors.find((v) => v.name === 'compaction')!.value as Compaction;
    const before = {
      ...current,
      claims: {
        ...current.claims,
        resolved: current.claims.resolved.map((c) => ({
          ...c,
          name: null,
          detail: null,
          outcomeDetail: null,
        })),
        unresolved: current.claims.unresolved.map((c) => ({
          ...c,
          detail: null,
          handle: null,
          logPath: null,
        })),
      },
    };
    expect(decoded).toStrictEqual(fromJson(toJson(before)));
  });

  it('covers every change type in the turn and every record', () => {
    const turn = vectors.find((v) => v.name === 'turn-event')?.value as TurnEvent;
    expect(new Set(turn.changes.map((c) => c.type))).toEqual(
      new Set(['item_opened', 'item_closed', 'item_disposed', 'artifact_recorded']),
    );
    expect(new Set(vectors.map((v) => v.record))).toEqual(
      new Set<RecordName>([
        'TurnEvent',
        'Compaction',
        'MarkerEmitted',
        'MarkerInvalid',
        'MarkerRevocation',
        'RegressionDetected',
        'DeadLetter',
      ]),
    );
  });
});

describe('the codec', () => {
  it('round-trips generated sessions exactly to the core types', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000 }), (seed) => {
        for (const turn of generateSession(seed, {})) {
          const bytes = encodeBody('TurnEvent', turn);
          expect(decodeBody('TurnEvent', bytes)).toStrictEqual(turn);
          // Deterministic: the same value always gives the same bytes.
          expect(encodeBody('TurnEvent', structuredClone(turn)).equals(bytes)).toBe(true);
        }
      }),
      { numRuns: 20 },
    );
  });

  it('decodes records as plain objects and the change union discriminated on type, not avsc-wrapped', () => {
    const turn = vectors[0]!.value as TurnEvent;
    const decoded = decodeBody<TurnEvent>('TurnEvent', encodeBody('TurnEvent', turn));
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype);
    for (const change of decoded.changes) {
      expect(Object.getPrototypeOf(change)).toBe(Object.prototype);
      expect(Object.keys(change)[0]).toBe('type');
    }
  });

  it('decodes bytes as a Uint8Array copy and encodes a Buffer or a Uint8Array the same', () => {
    const deadLetter = vectors.find((v) => v.record === 'DeadLetter')!.value as DeadLetter;
    const withBuffers = {
      ...deadLetter,
      key: Buffer.from(deadLetter.key!),
      value: Buffer.from(deadLetter.value!),
    };
    const bytes = encodeBody('DeadLetter', deadLetter);
    expect(encodeBody('DeadLetter', withBuffers).equals(bytes)).toBe(true);
    const decoded = decodeBody<DeadLetter>('DeadLetter', bytes);
    expect(Buffer.isBuffer(decoded.key)).toBe(false);
    expect(decoded.key?.constructor).toBe(Uint8Array);
    bytes.fill(0);
    expect(decoded.key).toStrictEqual(deadLetter.key);
    const nulls = { ...deadLetter, key: null, value: null };
    expect(decodeBody('DeadLetter', encodeBody('DeadLetter', nulls))).toStrictEqual(nulls);
  });

  it('gives the same bytes whatever the order of the keys in the value', () => {
    const turn = vectors[0]!.value as TurnEvent;
    const reversed = Object.fromEntries(Object.entries(turn).reverse());
    expect(encodeBody('TurnEvent', reversed).equals(encodeBody('TurnEvent', turn))).toBe(true);
  });

  it('refuses a value that does not fit the schema, naming the path', () => {
    const turn = vectors[0]!.value as TurnEvent;
    expect(() => encodeBody('TurnEvent', { ...turn, seq: 'twelve' })).toThrow(ContractError);
    expect(() => encodeBody('TurnEvent', { ...turn, seq: 'twelve' })).toThrow(/at seq/);
    expect(() =>
      encodeBody('TurnEvent', { ...turn, changes: [{ type: 'item_exploded', itemId: 'x' }] }),
    ).toThrow(/changes/);
  });

  it('resolves a newer writer schema (an added optional field) to the core shape', () => {
    const v2 = rawSchemaOf('TurnEvent') as { fields: unknown[] };
    v2.fields.push({ name: 'model', type: ['null', 'string'], default: null, doc: 'v2' });
    const writer = avro.Type.forSchema(v2 as avro.Schema);
    const turn = vectors[0]!.value as TurnEvent;
    const body = typeOf(v2 as avro.Schema).toBuffer({ ...turn, model: 'gpt' });
    const lookup = lookupFor(7, writer);
    expect(lookup.ok).toBe(true);
    if (lookup.ok) expect(lookup.decode(body)).toStrictEqual(turn);
  });

  it('answers unexpected_schema for a schema that is not one of ours, or cannot be read as ours', () => {
    const foreign = avro.Type.forSchema({
      type: 'record',
      name: 'x.Other',
      fields: [{ name: 'a', type: 'int' }],
    });
    expect(lookupFor(1, foreign)).toMatchObject({ ok: false, reason: 'unexpected_schema' });
    const broken = rawSchemaOf('TurnEvent') as { fields: { name: string; type: unknown }[] };
    const seq = broken.fields.find((f) => f.name === 'seq')!;
    seq.type = 'string';
    expect(lookupFor(2, avro.Type.forSchema(broken as avro.Schema))).toMatchObject({
      ok: false,
      reason: 'unexpected_schema',
    });
  });

  it('reads with the local type when the writer schema is the same', () => {
    const writer = avro.Type.forSchema(rawSchemaOf('Compaction'));
    expect(localType('Compaction').equals(writer)).toBe(true);
  });
});

describe('registry framing', () => {
  it('frames with magic byte 0 and a 4-byte big-endian schema id', () => {
    const framed = frame(258, Buffer.from([9, 9]));
    expect([...framed]).toEqual([0, 0, 0, 1, 2, 9, 9]);
    expect(unframe(framed)).toEqual({ ok: true, schemaId: 258, body: Buffer.from([9, 9]) });
  });

  it('tells an empty value, a value too short for the framing and a wrong magic byte apart', () => {
    expect(unframe(null)).toMatchObject({ ok: false, reason: 'empty_value' });
    expect(unframe(Buffer.alloc(0))).toMatchObject({ ok: false, reason: 'empty_value' });
    expect(unframe(Buffer.from('abcd'))).toMatchObject({ ok: false, reason: 'not_avro' });
    expect(unframe(Buffer.from([1, 0, 0, 0, 1, 2]))).toMatchObject({ ok: false, reason: 'wrong_magic_byte' });
  });
});
