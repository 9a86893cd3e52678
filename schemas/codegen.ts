// Generates libs/core/src/wire/*.generated.ts (one file per schema, and an index) from schemas/*.avsc, so the TypeScript wire types cannot
// drift from the Avro schemas: the schemas are the single source of truth.
//
//   pnpm exec tsx schemas/codegen.ts          write the file
//   pnpm exec tsx schemas/codegen.ts --check  exit 1 if the file is stale
//
// It also enforces the conventions the contract relies on: one top-level record per file, named as the
// file, in namespace tidemark.v1; a doc on every record and field; nullable fields as ["null", T] with
// default null; every record in a multi-record union tagged as a variant (a first field `type` that is a
// single-symbol enum, and logicalType tidemark-variant) so that it decodes to a TS discriminated union.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const namespace = 'tidemark.v1';
export const variantLogicalType = 'tidemark-variant';
export const command = 'pnpm exec tsx schemas/codegen.ts';

const here = dirname(fileURLToPath(import.meta.url));
export const schemasDir = here;
export const outputDir = resolve(here, '../libs/core/src/wire');

/** One generated file of outputDir. */
export interface GeneratedFile {
  readonly name: string;
  readonly source: string;
}

export interface SchemaFile {
  readonly file: string;
  readonly schema: unknown;
}

type Json = null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json };
type JsonObject = { readonly [key: string]: Json };

const primitives: Readonly<Record<string, string>> = {
  null: 'null',
  boolean: 'boolean',
  int: 'number',
  long: 'number',
  float: 'number',
  double: 'number',
  // Uint8Array, not Buffer: libs/core is pure and must not depend on Node.
  bytes: 'Uint8Array',
  string: 'string',
};

/** Every `schemas/*.avsc` file, in file-name order (the order keeps the output deterministic). */
export function loadSchemas(dir: string = schemasDir): SchemaFile[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.avsc'))
    .sort()
    .map((name) => ({ file: name, schema: JSON.parse(readFileSync(join(dir, name), 'utf8')) as unknown }));
}

/** A named type as emitted: a record's interface or an enum's literal union. */
type Emitted =
  | {
      readonly kind: 'record';
      readonly name: string;
      readonly doc: string;
      readonly fields: readonly EmittedField[];
    }
  | {
      readonly kind: 'enum';
      readonly name: string;
      readonly doc: string | null;
      readonly symbols: readonly string[];
    };

interface EmittedField {
  readonly name: string;
  readonly doc: string;
  readonly type: string;
}

class SchemaError extends Error {
  constructor(where: string, message: string) {
    super(`${where}: ${message}`);
    this.name = 'SchemaError';
  }
}

function fail(error: Error): never {
  throw error;
}

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isArray(value: Json | undefined): value is readonly Json[] {
  return Array.isArray(value);
}

function stringAt(object: JsonObject, key: string, where: string): string {
  const value = object[key];
  if (typeof value !== 'string' || value.length === 0) {
    throw new SchemaError(where, `"${key}" must be a non-empty string`);
  }
  return value;
}

/** The definition of a named type without its docs: two files may define the same name only this way. */
function shape(value: Json): string {
  if (isArray(value)) return `[${value.map(shape).join(',')}]`;
  if (isObject(value)) {
    const keys = Object.keys(value)
      .filter((key) => key !== 'doc')
      .sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${shape(value[key] ?? null)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Generates the TypeScript source for the given schemas. Pure: same input, same bytes. */
/** Every generated source, one after the other (what the types are, whichever file holds them). */
export function generate(files: readonly SchemaFile[]): string {
  return generateFiles(files)
    .map((file) => file.source)
    .join('\n');
}

/**
 * The files of outputDir: each schema's types in `<Schema>.generated.ts` (a type two schemas share
 * lives in the first, and the other imports it), and `index.generated.ts` re-exporting them all.
 */
export function generateFiles(files: readonly SchemaFile[]): GeneratedFile[] {
  const emitted = new Map<string, Emitted>();
  const shapes = new Map<string, { readonly file: string; readonly shape: string }>();

  for (const { file, schema } of [...files].sort((a, b) =>
    a.file < b.file ? -1 : a.file > b.file ? 1 : 0,
  )) {
    const where = file;
    const root = schema as Json;
    if (!isObject(root) || root['type'] !== 'record') {
      throw new SchemaError(where, 'the top level must be a record');
    }
    if (stringAt(root, 'name', where) !== basename(file, '.avsc')) {
      throw new SchemaError(where, `the record must be named as its file (${basename(file, '.avsc')})`);
    }
    if (root['namespace'] !== namespace) throw new SchemaError(where, `the namespace must be ${namespace}`);
    // Avro requires full names unique within one schema; across files a name may repeat only with an
    // identical definition, so a shared enum cannot drift between two files.
    const local = new Map<string, Emitted>();

    const define = (definition: JsonObject, path: string): string => {
      const name = stringAt(definition, 'name', path);
      if (name.includes('.')) {
        throw new SchemaError(path, `use short names in namespace ${namespace}, not ${name}`);
      }
      if (definition['namespace'] !== undefined && definition['namespace'] !== namespace) {
        throw new SchemaError(path, `the namespace must be ${namespace}`);
      }
      if (local.has(name)) throw new SchemaError(path, `${name} is defined twice in one file`);
      const previous = shapes.get(name);
      const own = shape(definition);
      if (previous !== undefined && previous.shape !== own) {
        throw new SchemaError(path, `${name} is defined differently in ${previous.file}`);
      }
      let result: Emitted;
      if (definition['type'] === 'enum') {
        const symbols = definition['symbols'];
        if (!isArray(symbols) || symbols.length === 0 || !symbols.every((s) => typeof s === 'string')) {
          throw new SchemaError(path, `enum ${name} needs symbols`);
        }
        const doc = definition['doc'];
        result = {
          kind: 'enum',
          name,
          doc: typeof doc === 'string' ? doc : null,
          symbols,
        };
      } else if (definition['type'] === 'record') {
        const doc = stringAt(definition, 'doc', `${path} (record ${name})`);
        const fields = definition['fields'];
        if (!isArray(fields) || fields.length === 0) {
          throw new SchemaError(path, `record ${name} needs fields`);
        }
        // Register before the fields so a recursive reference resolves (none exist today) and so the
        // output lists a record before the types nested in it.
        local.set(name, { kind: 'record', name, doc, fields: [] });
        if (previous === undefined) emitted.set(name, { kind: 'record', name, doc, fields: [] });
        const emittedFields = fields.map((field, index) => {
          const fieldPath = `${path}.${name}.fields[${index}]`;
          if (!isObject(field)) throw new SchemaError(fieldPath, 'a field must be an object');
          const fieldName = stringAt(field, 'name', fieldPath);
          const fieldDoc = stringAt(field, 'doc', `${path}.${name}.${fieldName}`);
          const type = field['type'];
          if (type === undefined) throw new SchemaError(fieldPath, 'a field needs a type');
          if (isArray(type) && type.includes('null') && (type[0] !== 'null' || field['default'] !== null)) {
            throw new SchemaError(
              `${path}.${name}.${fieldName}`,
              'a nullable field is ["null", T] with "default": null',
            );
          }
          return { name: fieldName, doc: fieldDoc, type: tsType(type, `${path}.${name}.${fieldName}`) };
        });
        result = { kind: 'record', name, doc, fields: emittedFields };
      } else {
        throw new SchemaError(path, `unsupported named type ${JSON.stringify(definition['type'])}`);
      }
      local.set(name, result);
      if (previous === undefined) {
        shapes.set(name, { file, shape: own });
        emitted.set(name, result);
      }
      return name;
    };

    const reference = (name: string, path: string): string => {
      const named = local.get(name.startsWith(`${namespace}.`) ? name.slice(namespace.length + 1) : name);
      if (named === undefined) throw new SchemaError(path, `unknown type ${name}`);
      return literalOf(named) ?? named.name;
    };

    const tsType = (type: Json, path: string): string => {
      if (typeof type === 'string') return primitives[type] ?? reference(type, path);
      if (isArray(type)) return unionType(type, path);
      if (!isObject(type) || typeof type['type'] !== 'string') {
        throw new SchemaError(path, `unsupported type ${JSON.stringify(type)}`);
      }
      const name = type['type'];
      switch (name) {
        case 'record':
        case 'enum':
          return reference(define(type, path), path);
        case 'array': {
          const items = tsType(type['items'] ?? null, `${path}[]`);
          return `readonly ${items.includes('|') ? `(${items})` : items}[]`;
        }
        case 'map':
          return `Readonly<Record<string, ${tsType(type['values'] ?? null, `${path}{}`)}>>`;
        case 'fixed':
          return 'Uint8Array';
        default:
          // A primitive written as an object, possibly with a logical type the codec does not register
          // (timestamp-millis on a long, say): Avro then reads the underlying type.
          return primitives[name] ?? fail(new SchemaError(path, `unsupported type ${name}`));
      }
    };

    const unionType = (branches: readonly Json[], path: string): string => {
      const nonNull = branches.filter((branch) => branch !== 'null');
      if (nonNull.length > 1) {
        for (const [index, branch] of nonNull.entries()) assertVariant(branch, `${path}|${index}`);
      }
      const types = nonNull.map((branch, index) => tsType(branch, `${path}|${index}`));
      return [...types, ...(nonNull.length < branches.length ? ['null'] : [])].join(' | ');
    };

    const assertVariant = (branch: Json, path: string): void => {
      const tagged =
        isObject(branch) &&
        branch['type'] === 'record' &&
        branch['logicalType'] === variantLogicalType &&
        isArray(branch['fields']) &&
        isObject(branch['fields'][0]) &&
        branch['fields'][0]['name'] === 'type' &&
        isObject(branch['fields'][0]['type']) &&
        branch['fields'][0]['type']['type'] === 'enum' &&
        isArray(branch['fields'][0]['type']['symbols']) &&
        branch['fields'][0]['type']['symbols'].length === 1;
      if (!tagged) {
        throw new SchemaError(
          path,
          `a record in a union with other records must be an inline variant: logicalType ${variantLogicalType} ` +
            'and a first field "type" that is a single-symbol enum',
        );
      }
    };

    define(root, where);
  }

  const origin = (name: string): string => basename(shapes.get(name)!.file, '.avsc');
  const bySchema = new Map<string, Emitted[]>();
  for (const type of emitted.values()) {
    const schema = origin(type.name);
    bySchema.set(schema, [...(bySchema.get(schema) ?? []), type]);
  }
  const schemas = [...bySchema.keys()];
  return [
    ...schemas.map((schema) => ({
      name: `${schema}.generated.ts`,
      source: render(bySchema.get(schema)!, importsOf(bySchema.get(schema)!, schema, emitted, origin)),
    })),
    {
      name: 'index.generated.ts',
      source: [header, '', ...schemas.map((schema) => `export * from './${schema}.generated.js';`), ''].join(
        '\n',
      ),
    },
  ];
}

/** The types a schema's file uses that another schema's file defines, by file: its import lines. */
function importsOf(
  types: readonly Emitted[],
  schema: string,
  emitted: ReadonlyMap<string, Emitted>,
  origin: (name: string) => string,
): string[] {
  const wanted = new Map<string, Set<string>>();
  for (const type of types) {
    if (type.kind !== 'record') continue;
    for (const field of type.fields) {
      for (const [name] of field.type.matchAll(/\b[A-Z]\w*\b/g)) {
        if (!emitted.has(name) || origin(name) === schema || literalOf(emitted.get(name)!) !== null) continue;
        wanted.set(origin(name), (wanted.get(origin(name)) ?? new Set()).add(name));
      }
    }
  }
  return [...wanted.keys()]
    .sort()
    .map(
      (from) => `import type { ${[...wanted.get(from)!].sort().join(', ')} } from './${from}.generated.js';`,
    );
}

/** A single-symbol enum is a discriminator: its TS type is the literal itself. */
function literalOf(named: Emitted): string | null {
  return named.kind === 'enum' && named.symbols.length === 1 ? `'${named.symbols[0]}'` : null;
}

const header = [
  `// Generated from schemas/*.avsc by \`${command}\`. Do not edit: change the schemas and regenerate.`,
  '// Wire shapes as the codec decodes them: longs as numbers, bytes as Uint8Array, nullable fields as',
  '// T | null, unions of variant records as unions discriminated on `type`.',
].join('\n');

function render(types: readonly Emitted[], imports: readonly string[]): string {
  const lines: string[] = [header, ''];
  if (imports.length > 0) lines.push(...imports, '');
  for (const type of types) {
    switch (type.kind) {
      case 'enum': {
        if (literalOf(type) !== null) break;
        lines.push(...jsDoc(type.doc ?? `The symbols of the Avro enum ${type.name}.`, ''));
        lines.push(`export type ${type.name} = ${type.symbols.map((s) => `'${s}'`).join(' | ')};`, '');
        lines.push(`/** Every ${type.name}, in schema order. */`);
        lines.push(
          `export const ${type.name}Symbols: readonly ${type.name}[] = [${type.symbols.map((s) => `'${s}'`).join(', ')}];`,
          '',
        );
        break;
      }
      case 'record':
        lines.push(...jsDoc(type.doc, ''), `export interface ${type.name} {`);
        for (const field of type.fields) {
          lines.push(...jsDoc(field.doc, '  '), `  readonly ${field.name}: ${field.type};`);
        }
        lines.push('}', '');
        break;
      default: {
        const never: never = type;
        throw new Error(`unhandled ${JSON.stringify(never)}`);
      }
    }
  }
  return `${lines.join('\n').trimEnd()}\n`;
}

/** A doc as a JSDoc block wrapped at about 100 columns, so the output reads well and is stable. */
function jsDoc(doc: string, indent: string): string[] {
  const width = 100 - indent.length - 3;
  const words = doc.replaceAll('*/', '*\\/').split(/\s+/).filter(Boolean);
  const wrapped: string[] = [];
  let line = '';
  for (const word of words) {
    if (line.length > 0 && line.length + 1 + word.length > width) {
      wrapped.push(line);
      line = word;
    } else {
      line = line.length === 0 ? word : `${line} ${word}`;
    }
  }
  if (line.length > 0) wrapped.push(line);
  if (wrapped.length === 1) return [`${indent}/** ${wrapped[0]} */`];
  return [`${indent}/**`, ...wrapped.map((text) => `${indent} * ${text}`), `${indent} */`];
}

/** The generated files outputDir holds now, by name. */
export function currentFiles(): Map<string, string> {
  let names: string[] = [];
  try {
    names = readdirSync(outputDir).filter((name) => name.endsWith('.generated.ts'));
  } catch {
    // No directory yet: everything is stale.
  }
  return new Map(names.map((name) => [name, readFileSync(resolve(outputDir, name), 'utf8')]));
}

function main(argv: readonly string[]): number {
  const files = generateFiles(loadSchemas());
  const current = currentFiles();
  const stale = current.size !== files.length || files.some((file) => current.get(file.name) !== file.source);
  if (argv.includes('--check')) {
    if (!stale) return 0;
    process.stderr.write(`${outputDir} is stale: run ${command}\n`);
    return 1;
  }
  mkdirSync(outputDir, { recursive: true });
  for (const name of current.keys()) {
    if (!files.some((file) => file.name === name)) rmSync(resolve(outputDir, name));
  }
  for (const file of files) writeFileSync(resolve(outputDir, file.name), file.source);
  process.stdout.write(`wrote ${files.length} files to ${outputDir}\n`);
  return 0;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = main(process.argv.slice(2));
}
