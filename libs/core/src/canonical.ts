import { invalidInput } from './errors.js';

// The canonical JSON encoding every id and hash is computed over: object keys sorted by UTF-16 code
// units, no whitespace, strings and numbers as JSON.stringify writes them. For the values Tidemark
// hashes (strings, safe integers, booleans, null, arrays, plain objects) this is RFC 8785 (JCS), so
// another language can reproduce the bytes. Properties whose value is undefined are omitted, as JSON
// does; anything else JSON cannot say the same way everywhere (NaN, bigint, bytes, a Map) is refused.

export function canonicalJson(value: unknown): string {
  return encode(value, '$');
}

function encode(value: unknown, path: string): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'string':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw invalidInput(`canonical JSON: ${path} is not a finite number`);
      // JSON.stringify writes -0 as 0, as RFC 8785 does.
      return JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value)) {
        const items = value.map((item: unknown, index) => {
          if (item === undefined) throw invalidInput(`canonical JSON: ${path}[${index}] is undefined`);
          return encode(item, `${path}[${index}]`);
        });
        return `[${items.join(',')}]`;
      }
      const prototype = Object.getPrototypeOf(value) as unknown;
      if (prototype !== Object.prototype && prototype !== null) {
        throw invalidInput(`canonical JSON: ${path} is not a plain object`);
      }
      const record = value as Record<string, unknown>;
      const members = Object.keys(record)
        .filter((key) => record[key] !== undefined)
        .sort()
        .map((key) => `${JSON.stringify(key)}:${encode(record[key], `${path}.${key}`)}`);
      return `{${members.join(',')}}`;
    }
    case 'bigint':
    case 'function':
    case 'symbol':
    case 'undefined':
      break;
  }
  throw invalidInput(`canonical JSON: ${path} is a ${typeof value}`);
}

/** Orders strings by UTF-16 code units, as canonical JSON orders keys; never by locale. */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
