import { existsSync, readFileSync } from 'node:fs';
import avro from 'avsc';
import type { Schema, Type } from 'avsc';
import type { MarkerDecision } from '@tidemark/core';
import { ContractError } from './errors.js';
import { recordsByRole, type EventsByRole, type RecordName, type TopicRole } from './topics.js';

// The Avro codec: avsc types built from schemas/*.avsc (the single source of truth), decoding to exactly
// the core's TypeScript wire types and encoding from them:
//
// - Records decode to plain objects (avsc's own record classes would leak prototypes into the core).
// - Unions of variant records (TurnEvent.changes) are unwrapped and discriminated on `type`: each
//   variant is tagged with logicalType tidemark-variant and a single-symbol enum `type` as first field,
//   so the union picks its branch by that tag rather than by avsc's `{ "tidemark.v1.ItemOpened": … }`
//   wrapping.
// - bytes decode to a Uint8Array (a copy, not a Buffer over the fetch buffer); a Uint8Array or a Buffer
//   encodes.
// - Longs are numbers; avsc refuses a long beyond 2^53 rather than lose precision.
//
// Encoding is deterministic: the same value gives the same bytes (Avro has no map or float here whose
// order or representation could vary).

/** The schemas: the repository's schemas/ in the workspace, or the copy an installed package carries. */
const packedSchemas = new URL('./schemas/', import.meta.url);
const schemasDir = existsSync(packedSchemas) ? packedSchemas : new URL('../../../schemas/', import.meta.url);

export const recordNames: readonly RecordName[] = [
  'TurnEvent',
  'Compaction',
  'MarkerEmitted',
  'MarkerInvalid',
  'MarkerRevocation',
  'RegressionDetected',
  'DeadLetter',
];

/** The schema of a record as written in schemas/<Record>.avsc, parsed. */
export function rawSchemaOf(record: RecordName): Schema {
  return JSON.parse(readFileSync(new URL(`${record}.avsc`, schemasDir), 'utf8')) as Schema;
}

// A logical type whose resolution against another writer schema resolves the underlying type field by
// field (avsc's default would hand the writer's raw value to _fromValue, skipping schema evolution).
abstract class ContractType extends avro.types.LogicalType {
  protected override _resolve(): undefined {
    return undefined;
  }

  // avsc calls _update(resolver, writerType, opts) to resolve this type from a writer's.
  _update(resolver: { _read?: (tap: unknown) => unknown }, writer: Type, opts: unknown): void {
    const underlyingWriter = avro.Type.isType(writer, 'logical')
      ? (writer as avro.types.LogicalType).underlyingType
      : writer;
    const inner = this.underlyingType.createResolver(underlyingWriter, opts as never) as unknown as {
      _read(tap: unknown): unknown;
    };
    resolver._read = (tap) => this._fromValue(inner._read(tap));
  }
}

/** Any record: decoded as a plain object. */
class PlainRecord extends ContractType {
  protected override _fromValue(value: object): object {
    return { ...value };
  }
  protected override _toValue(value: unknown): unknown {
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : undefined;
  }
}

/** A record in a union of variants: chosen by its `type` tag. */
class VariantRecord extends ContractType {
  readonly tag: string;
  constructor(schema: Schema, opts?: unknown) {
    super(schema, opts);
    const first = (this.underlyingType as avro.types.RecordType).fields[0];
    const symbols = (first?.type as avro.types.EnumType | undefined)?.symbols;
    if (first?.name !== 'type' || symbols?.length !== 1 || symbols[0] === undefined) {
      throw new Error(`${this.underlyingType.name ?? 'a variant'} needs a single-symbol enum \`type\` first`);
    }
    this.tag = symbols[0];
  }
  protected override _fromValue(value: object): object {
    return { ...value };
  }
  protected override _toValue(value: unknown): unknown {
    return typeof value === 'object' && value !== null && (value as { type?: unknown }).type === this.tag
      ? value
      : undefined;
  }
}

/** bytes as Uint8Array. */
class Bytes extends ContractType {
  protected override _fromValue(value: Buffer): Uint8Array {
    return new Uint8Array(value);
  }
  protected override _toValue(value: unknown): Buffer | undefined {
    if (Buffer.isBuffer(value)) return value;
    if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    return undefined;
  }
}

const variantLogicalType = 'tidemark-variant';

/** avsc options that give the core's shapes; a fresh object per call (avsc fills in its registry). */
export function avroOptions(): Partial<avro.ForSchemaOptions> {
  return {
    wrapUnions: 'auto',
    logicalTypes: {
      [variantLogicalType]: VariantRecord,
      'tidemark-record': PlainRecord,
      'tidemark-bytes': Bytes,
    },
    // Every record not tagged otherwise becomes a PlainRecord, every bytes a Bytes. The hook sees the
    // tagged copy again and lets avsc build it (it has a logicalType now).
    typeHook: (schema: Schema, opts: avro.ForSchemaOptions) => {
      if (schema === 'bytes')
        return avro.Type.forSchema({ type: 'bytes', logicalType: 'tidemark-bytes' }, opts);
      if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return undefined;
      const object = schema as { type?: unknown; logicalType?: unknown };
      if (object.logicalType !== undefined) return undefined;
      if (object.type === 'record')
        return avro.Type.forSchema({ ...object, logicalType: 'tidemark-record' } as Schema, opts);
      if (object.type === 'bytes')
        return avro.Type.forSchema({ ...object, logicalType: 'tidemark-bytes' } as Schema, opts);
      return undefined;
    },
  };
}

/** The avsc type of a schema, decoding to the core's shapes. */
export function typeOf(schema: Schema): Type {
  return avro.Type.forSchema(schema, avroOptions());
}

const localTypes = new Map<RecordName, Type>(recordNames.map((name) => [name, typeOf(rawSchemaOf(name))]));

/** The local (reader) type of a record. */
export function localType(record: RecordName): Type {
  const type = localTypes.get(record);
  if (type === undefined) throw new Error(`unknown record ${record}`);
  return type;
}

/** Which record an event of a role is. */
export function recordOf<R extends TopicRole>(role: R, event: EventsByRole[R]): RecordName {
  switch (role) {
    case 'turns':
      return 'TurnEvent';
    case 'compactions':
      return 'Compaction';
    case 'revocations':
      return 'MarkerRevocation';
    case 'regressions':
      return 'RegressionDetected';
    case 'deadletter':
      return 'DeadLetter';
    case 'markers': {
      const type = (event as MarkerDecision).type;
      if (type === 'marker_emitted') return 'MarkerEmitted';
      if (type === 'marker_invalid') return 'MarkerInvalid';
      throw new ContractError(
        'wrong_role',
        `a markers event must be marker_emitted or marker_invalid, not ${String(type)}`,
      );
    }
    default: {
      const never: never = role;
      throw new ContractError('wrong_role', `unknown role ${String(never)}`);
    }
  }
}

/** Whether a record may appear on a role's topic. */
export function allowedOn(role: TopicRole, record: RecordName): boolean {
  return recordsByRole[role].includes(record);
}

/**
 * The Avro binary body of a record (no registry framing). Throws a ContractError naming every path
 * that does not fit the schema.
 */
export function encodeBody(record: RecordName, value: unknown): Buffer {
  const type = localType(record);
  const paths: string[] = [];
  if (!type.isValid(value, { errorHook: (path) => paths.push(path.join('.') || '(root)') })) {
    throw new ContractError('invalid_event', `${record} does not fit its schema at ${paths.join(', ')}`);
  }
  return type.toBuffer(value);
}

/** Decodes an Avro binary body written with the local schema of the record. */
export function decodeBody<T>(record: RecordName, body: Buffer): T {
  return localType(record).fromBuffer(body) as T;
}

// Registry framing: magic byte 0, the schema id as a 4-byte big-endian integer, then the Avro body.
const frameHeaderBytes = 5;

export function frame(schemaId: number, body: Buffer): Buffer {
  const header = Buffer.alloc(frameHeaderBytes);
  header.writeUInt8(0, 0);
  header.writeUInt32BE(schemaId, 1);
  return Buffer.concat([header, body]);
}

/** The framing of a record value, or why it is not framed. Pure. */
export type Unframed =
  | { readonly ok: true; readonly schemaId: number; readonly body: Buffer }
  | {
      readonly ok: false;
      readonly reason: 'empty_value' | 'not_avro' | 'wrong_magic_byte';
      readonly message: string;
    };

export function unframe(value: Buffer | null): Unframed {
  if (value === null || value.length === 0) {
    return {
      ok: false,
      reason: 'empty_value',
      message: value === null ? 'a tombstone (no value)' : 'a zero-byte value',
    };
  }
  if (value.length < frameHeaderBytes) {
    return {
      ok: false,
      reason: 'not_avro',
      message: `${value.length} byte(s), too short for the registry framing`,
    };
  }
  const magic = value.readUInt8(0);
  if (magic !== 0)
    return { ok: false, reason: 'wrong_magic_byte', message: `magic byte ${magic}, expected 0` };
  return { ok: true, schemaId: value.readUInt32BE(1), body: value.subarray(frameHeaderBytes) };
}
