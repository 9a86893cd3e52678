import { invalidInput } from './errors.js';

// The canonical JSON encoding every id and hash is computed over: object keys sorted by UTF-16 code
// units, no whitespace, strings and numbers as JSON.stringify writes them. For the values Tidemark
// hashes (strings, safe integers, booleans, null, arrays, plain objects) this is RFC 8785 (JCS), so
// another language can reproduce the bytes. Properties whose value is undefined are omitted, as JSON
// does; anything else JSON cannot say the same way everywhere (NaN, bigint, bytes, a Map) is refused.

export function canonicalJson(value: unknown): string {
  try {
    return encode(value);
  } catch (error) {
    // Refused somewhere: encoded again, the slow way, to say where (or as it always was, if it can be).
    if (error === refused) return encodeAt(value, '$');
    throw error;
  }
}

/**
 * The length of canonicalJson(value), for a value it accepts, without building it: JSON.stringify writes
 * the same members with the same escapes, only in insertion order, and order does not change a length.
 * A summary's size is measured by it (every summary measures its claims); V8's native stringify makes a
 * tenth of the garbage of the sorted encoding. It checks nothing: what canonicalJson would refuse (NaN,
 * a Map) is refused where the value is encoded for its id.
 */
export function canonicalJsonLength(value: unknown): number {
  return JSON.stringify(value).length;
}

/** Thrown by `encode` for what canonical JSON cannot say; `encodeAt` then tells where. */
const refused = new Error('not canonical JSON');

/**
 * The encoding, on the hot path (every id, hash and summary size goes through it): appends to one string
 * and builds no path. Its output is `encodeAt`'s for every value it accepts (a property test holds them
 * to it); anything doubtful (a hole in an array, an exotic prototype) throws `refused`.
 */
function encode(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw refused;
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (Array.isArray(value)) {
        let out = '[';
        for (let index = 0; index < value.length; index++) {
          if (!(index in value) || value[index] === undefined) throw refused;
          if (index > 0) out += ',';
          out += encode(value[index]);
        }
        return `${out}]`;
      }
      const prototype = Object.getPrototypeOf(value) as unknown;
      if (prototype !== Object.prototype && prototype !== null) throw refused;
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record);
      sortInPlace(keys);
      let out = '{';
      for (const key of keys) {
        const member = record[key];
        if (member === undefined) continue;
        if (out.length > 1) out += ',';
        out += `${quotedKey(key)}:${encode(member)}`;
      }
      return `${out}}`;
    }
    case 'bigint':
    case 'function':
    case 'symbol':
    case 'undefined':
      break;
  }
  throw refused;
}

/**
 * Keys in code-unit order, as Array.prototype.sort orders strings, in place: most objects have a few
 * keys, often in order already (then one pass), and V8's sort copies the array into a work array first,
 * the largest garbage of hashing a decoded turn (whose keys come in schema order).
 */
function sortInPlace(keys: string[]): void {
  // Insertion sort is quadratic: an object with many keys (data as keys) is left to V8's sort.
  if (keys.length > 32) {
    keys.sort();
    return;
  }
  for (let index = 1; index < keys.length; index++) {
    const key = keys[index]!;
    let at = index;
    while (at > 0 && keys[at - 1]! > key) {
      keys[at] = keys[at - 1]!;
      at -= 1;
    }
    keys[at] = key;
  }
}

/** Keys recur (a few dozen field names): each is quoted once. Bounded, in case keys are data. */
const quotedKeys = new Map<string, string>();
function quotedKey(key: string): string {
  let quoted = quotedKeys.get(key);
  if (quoted === undefined) {
    quoted = JSON.stringify(key);
    if (quotedKeys.size < 4_096) quotedKeys.set(key, quoted);
  }
  return quoted;
}

/** The reference encoding, carrying the path of each value so that a refusal can name it. */
function encodeAt(value: unknown, path: string): string {
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
          return encodeAt(item, `${path}[${index}]`);
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
        .map((key) => `${JSON.stringify(key)}:${encodeAt(record[key], `${path}.${key}`)}`);
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
