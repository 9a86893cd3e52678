import { describe, expect, it } from 'vitest';
import {
  command,
  currentFiles,
  generate,
  generateFiles,
  loadSchemas,
  type SchemaFile,
} from '../schemas/codegen.js';

// The TypeScript wire types are generated from schemas/*.avsc and committed; this proves the committed
// file is what the schemas generate today, so the two cannot drift.

const schemas = loadSchemas();

describe('schemas codegen', () => {
  it(`has generated libs/core/src/wire/ from the current schemas, and nothing else there (else run ${command})`, () => {
    const expected = new Map(generateFiles(schemas).map((file) => [file.name, file.source]));
    expect(currentFiles()).toEqual(expected);
  });

  it('gives each schema its own file, importing the types another schema defines', () => {
    const files = generateFiles(schemas);
    expect(files.map((f) => f.name)).toEqual([
      'Compaction.generated.ts',
      'DeadLetter.generated.ts',
      'MarkerEmitted.generated.ts',
      'MarkerInvalid.generated.ts',
      'MarkerRevocation.generated.ts',
      'RegressionDetected.generated.ts',
      'TurnEvent.generated.ts',
      'index.generated.ts',
    ]);
    const turnEvent = files.find((f) => f.name === 'TurnEvent.generated.ts')!.source;
    // Shared enums live where they are first defined, and are imported (as types) elsewhere.
    expect(turnEvent).toMatch(
      /^import type \{[^}]*\bDisposition\b[^}]*\} from '\.\/Compaction\.generated\.js';$/m,
    );
    expect(turnEvent).not.toContain('export type Disposition =');
    for (const { source } of files) expect(source.split('\n').length).toBeLessThan(400);
  });

  it('covers one top-level record per schema file', () => {
    expect(schemas.map((s) => s.file)).toEqual([
      'Compaction.avsc',
      'DeadLetter.avsc',
      'MarkerEmitted.avsc',
      'MarkerInvalid.avsc',
      'MarkerRevocation.avsc',
      'RegressionDetected.avsc',
      'TurnEvent.avsc',
    ]);
    const source = generate(schemas);
    for (const { file } of schemas)
      expect(source).toContain(`export interface ${file.replace('.avsc', '')} {`);
  });

  it('generates discriminated unions, nullable fields, numbers for longs and Uint8Array for bytes', () => {
    const source = generate(schemas);
    expect(source).toContain(
      'readonly changes: readonly (ItemOpened | ItemClosed | ItemDisposed | ArtifactRecorded)[];',
    );
    expect(source).toContain("readonly type: 'item_opened';");
    expect(source).toContain('readonly supersededBy: string | null;');
    expect(source).toContain('readonly seq: number;');
    expect(source).toContain('readonly value: Uint8Array | null;');
  });

  it('is deterministic whatever the order the files are given in', () => {
    expect(generate([...schemas].reverse())).toBe(generate(schemas));
  });

  const record = (fields: unknown[], extra: Record<string, unknown> = {}): SchemaFile => ({
    file: 'Thing.avsc',
    schema: { type: 'record', name: 'Thing', namespace: 'tidemark.v1', doc: 'A thing.', fields, ...extra },
  });
  const variant = (name: string, tagged = true) => ({
    type: 'record',
    name,
    doc: `${name}.`,
    ...(tagged ? { logicalType: 'tidemark-variant' } : {}),
    fields: [
      {
        name: 'type',
        doc: 'tag',
        type: { type: 'enum', name: `${name}Type`, symbols: [name.toLowerCase()] },
      },
    ],
  });

  it.each([
    [
      'a record without a doc',
      record([{ name: 'a', type: 'string', doc: 'a' }], { doc: undefined }),
      /"doc"/,
    ],
    ['a field without a doc', record([{ name: 'a', type: 'string' }]), /Thing\.a.*"doc"/],
    [
      'another namespace',
      record([{ name: 'a', type: 'string', doc: 'a' }], { namespace: 'other' }),
      /namespace/,
    ],
    [
      'a nullable field without a null default',
      record([{ name: 'a', type: ['null', 'string'], doc: 'a' }]),
      /default/,
    ],
    [
      'a union of untagged records',
      record([{ name: 'u', doc: 'u', type: [variant('A', false), variant('B', false)] }]),
      /variant/,
    ],
  ])('refuses %s', (_name, file, message) => {
    expect(() => generate([file])).toThrow(message);
  });

  it('refuses a shared name defined differently in two files', () => {
    const kind = (symbols: string[]) => ({
      name: 'k',
      doc: 'k',
      type: { type: 'enum', name: 'Kind', symbols },
    });
    const a: SchemaFile = {
      file: 'A.avsc',
      schema: { type: 'record', name: 'A', namespace: 'tidemark.v1', doc: 'A.', fields: [kind(['x', 'y'])] },
    };
    const b: SchemaFile = {
      file: 'B.avsc',
      schema: { type: 'record', name: 'B', namespace: 'tidemark.v1', doc: 'B.', fields: [kind(['x'])] },
    };
    expect(() => generate([a, b])).toThrow(/Kind is defined differently in A\.avsc/);
    expect(() =>
      generate([a, { ...b, schema: { ...(b.schema as object), fields: [kind(['x', 'y'])] } }]),
    ).not.toThrow();
  });
});
