import { COMPATIBILITY, SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import type { Type } from 'avsc';
import { localType, rawSchemaOf, recordNames, typeOf } from './codec.js';
import { ContractError } from './errors.js';
import { subjectOf, type RecordName } from './topics.js';

// The registry behind the codec: registers our schemas under TopicRecordNameStrategy subjects, caches
// the ids we write with, and turns an id read off the wire into a decoder that resolves the writer's
// schema to ours (a v2 writer's extra field is dropped, a missing field with a default is filled in).

/** How the body of a record written under a schema id decodes, or why it cannot. */
export type WriterLookup =
  | { readonly ok: true; readonly record: RecordName; readonly decode: (body: Buffer) => unknown }
  | {
      readonly ok: false;
      readonly reason: 'unknown_schema_id' | 'unexpected_schema';
      readonly message: string;
    };

export class Registry {
  readonly client: SchemaRegistry;
  readonly #ids = new Map<string, number>();
  readonly #writers = new Map<number, WriterLookup>();

  constructor(url: string, clientId?: string) {
    this.client = new SchemaRegistry({ host: url, ...(clientId === undefined ? {} : { clientId }) });
  }

  /**
   * Registers a record's schema under its subject on a topic with BACKWARD compatibility, and caches
   * the id. Idempotent: re-registering the same schema returns the same id.
   */
  async register(topic: string, record: RecordName): Promise<number> {
    const subject = subjectOf(topic, record);
    const cached = this.#ids.get(subject);
    if (cached !== undefined) return cached;
    try {
      const { id } = await this.client.register(
        { type: SchemaType.AVRO, schema: JSON.stringify(rawSchemaOf(record)) },
        { subject, compatibility: COMPATIBILITY.BACKWARD },
      );
      this.#ids.set(subject, id);
      return id;
    } catch (error) {
      throw registryError(`registering ${subject}`, error);
    }
  }

  /** The id to write a record with on a topic (registering it on first use). */
  async idFor(topic: string, record: RecordName): Promise<number> {
    return this.#ids.get(subjectOf(topic, record)) ?? this.register(topic, record);
  }

  /**
   * The decoder for a schema id read off the wire. An id the registry does not know, or whose schema
   * is not one of ours, is an answer (cached when it is ours); an unreachable registry is an error.
   */
  async writer(id: number): Promise<WriterLookup> {
    const cached = this.#writers.get(id);
    if (cached !== undefined) return cached;
    let writer: Type;
    try {
      writer = (await this.client.getSchema(id)) as Type;
    } catch (error) {
      if (statusOf(error) === 404) {
        // Not cached: the id may be registered later (a producer racing ahead of this consumer).
        return {
          ok: false,
          reason: 'unknown_schema_id',
          message: `the registry does not know schema id ${id}`,
        };
      }
      throw registryError(`looking up schema id ${id}`, error);
    }
    const lookup = lookupFor(id, writer);
    this.#writers.set(id, lookup);
    return lookup;
  }
}

export function lookupFor(id: number, writer: Type): WriterLookup {
  const name = writer.name ?? writer.typeName;
  const record = recordNames.find((r) => name === `tidemark.v1.${r}`);
  if (record === undefined) {
    return {
      ok: false,
      reason: 'unexpected_schema',
      message: `schema id ${id} is ${name}, not a Tidemark record`,
    };
  }
  const reader = localType(record);
  // Same canonical schema: read with our own type. Otherwise resolve the writer's schema to ours; a
  // writer we cannot resolve (an incompatible change that slipped past the registry) is unexpected.
  if (reader.equals(writer))
    return { ok: true, record, decode: (body): unknown => reader.fromBuffer(body) as unknown };
  try {
    const resolver = reader.createResolver(typeOf(writer.schema()));
    return { ok: true, record, decode: (body): unknown => reader.fromBuffer(body, resolver) as unknown };
  } catch (error) {
    return {
      ok: false,
      reason: 'unexpected_schema',
      message: `schema id ${id} (${name}) cannot be read as ours: ${(error as Error).message}`,
    };
  }
}

function statusOf(error: unknown): number | undefined {
  const status = (error as { status?: unknown } | null)?.status;
  return typeof status === 'number' ? status : undefined;
}

function registryError(what: string, error: unknown): ContractError {
  const status = statusOf(error);
  // 4xx (409 incompatible, 422 invalid) will not change by retrying; 5xx and network errors may.
  const retriable = status === undefined || status >= 500 || status === 408 || status === 429;
  return new ContractError('registry', `${what}: ${(error as Error).message ?? String(error)}`, {
    retriable,
    cause: error,
  });
}
