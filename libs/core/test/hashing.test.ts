import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  canonicalJsonLength,
  compactionIdOf,
  contextHashOf,
  definePolicy,
  generateSession,
  estimateTokens,
  fitToBudget,
  markerIdOf,
  policyIdOf,
  sessionKey,
  sha256Hex,
  TidemarkCoreError,
  turnContentHash,
} from '../src/index.js';

describe('sha256', () => {
  // FIPS 180-4 / NIST CSRC example vectors.
  it.each([
    ['', 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'],
    ['abc', 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'],
    [
      'abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq',
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    ],
    [
      'abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu',
      'cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1',
    ],
    [
      'The quick brown fox jumps over the lazy dog',
      'd7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592',
    ],
  ])('hashes %j to the known digest', (input, digest) => {
    expect(sha256Hex(input)).toBe(digest);
  });

  it('hashes a million "a" to the known digest', () => {
    expect(sha256Hex('a'.repeat(1_000_000))).toBe(
      'cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0',
    );
  });

  it('hashes a string as its UTF-8 bytes, the same as those bytes', () => {
    const text = 'héllo → 世界 🌊';
    expect(sha256Hex(text)).toBe(sha256Hex(new TextEncoder().encode(text)));
    expect(sha256Hex(text)).toBe('f7b2bf0b060fdc290716d472ca2f6ef47c90b0024e91b28275ce6b3bd0609411');
  });
});

describe('canonical JSON', () => {
  it('sorts keys at every level and writes no whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: true, y: null }], c: 'x' } })).toBe(
      '{"a":{"c":"x","d":[3,{"y":null,"z":true}]},"b":1}',
    );
  });

  it('sorts keys by code units, not by locale', () => {
    expect(canonicalJson({ b: 1, B: 2, é: 3, a: 4 })).toBe('{"B":2,"a":4,"b":1,"é":3}');
  });

  it('sorts integer-like keys as text too (JavaScript lists them first, in numeric order)', () => {
    expect(canonicalJson({ a: 1, 10: 'x', 9: 'y' })).toBe('{"10":"x","9":"y","a":1}');
  });

  it('sorts objects of few and of many keys alike (the small ones in place)', () => {
    for (const count of [2, 31, 32, 33, 200]) {
      const keys = Array.from({ length: count }, (_, i) => `k${String(count - i).padStart(4, '0')}`);
      const text = canonicalJson(Object.fromEntries(keys.map((key) => [key, 1])));
      expect(text).toBe(
        `{${[...keys]
          .sort()
          .map((key) => `"${key}":1`)
          .join(',')}}`,
      );
    }
  });

  it('omits undefined properties, as JSON does', () => {
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
  });

  it.each([
    ['NaN', NaN],
    ['Infinity', Infinity],
    ['a bigint', 1n],
    ['undefined in an array', [undefined]],
    ['a Map', new Map()],
    ['bytes', new Uint8Array(1)],
    ['a function', () => 1],
  ])('refuses %s', (_name, value) => {
    expect(() => canonicalJson(value)).toThrow(TidemarkCoreError);
  });

  it('names where a refused value sits', () => {
    expect(() => canonicalJson({ a: [1, { b: NaN }] })).toThrow(
      'canonical JSON: $.a[1].b is not a finite number',
    );
    expect(() => canonicalJson({ z: [null, undefined] })).toThrow('canonical JSON: $.z[1] is undefined');
  });

  it('writes what a plain recursive encoding writes, for any JSON value and undefined members', () => {
    // The definition, written the simplest way: canonicalJson's fast path must agree with it byte for byte.
    const plain = (value: unknown): string => {
      if (value === null || typeof value !== 'object') return JSON.stringify(value);
      if (Array.isArray(value)) return `[${value.map(plain).join(',')}]`;
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record).filter((key) => record[key] !== undefined);
      return `{${keys
        .sort()
        .map((key) => `${JSON.stringify(key)}:${plain(record[key])}`)
        .join(',')}}`;
    };
    const withUndefined = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.jsonValue({ maxDepth: 2 }),
        fc.array(tie('value')),
        fc.dictionary(fc.string(), fc.oneof(tie('value'), fc.constant(undefined))),
      ),
    })).value;
    fc.assert(
      fc.property(withUndefined, (value) => {
        expect(canonicalJson(value)).toBe(plain(value));
      }),
      { numRuns: 500 },
    );
  });

  it("measures a value's canonical length without encoding it, whatever its key order", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const reversed = JSON.parse(JSON.stringify(value), (_key, v: unknown) =>
          v !== null && typeof v === 'object' && !Array.isArray(v)
            ? Object.fromEntries(Object.entries(v).reverse())
            : v,
        ) as unknown;
        expect(canonicalJsonLength(value)).toBe(canonicalJson(value).length);
        expect(canonicalJsonLength(reversed)).toBe(canonicalJson(value).length);
      }),
      { numRuns: 500 },
    );
    expect(canonicalJsonLength({ b: [1, 'é\n'], a: { d: null, c: undefined } })).toBe(
      canonicalJson({ a: { d: null }, b: [1, 'é\n'] }).length,
    );
  });

  it('round-trips through JSON.parse and does not depend on key insertion order', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value);
        expect(canonicalJson(JSON.parse(text))).toBe(text);
        const reversed = JSON.parse(JSON.stringify(value), (_key, v: unknown) =>
          v !== null && typeof v === 'object' && !Array.isArray(v)
            ? Object.fromEntries(Object.entries(v).reverse())
            : v,
        ) as unknown;
        expect(canonicalJson(reversed)).toBe(text);
      }),
    );
  });
});

describe('session keys', () => {
  it('never give two sessions one key, whatever their ids hold', () => {
    expect(sessionKey('a', 'x/s')).not.toBe(sessionKey('a/x', 's'));
    expect(sessionKey('acme', 'migration-strict')).toBe('acme/migration-strict');
    const id = fc.string({ unit: fc.constantFrom('a', '/', '%', '2', 'F', '{', '}') });
    fc.assert(
      fc.property(id, id, id, id, (t1, s1, t2, s2) => {
        fc.pre(t1 !== t2 || s1 !== s2);
        expect(sessionKey(t1, s1)).not.toBe(sessionKey(t2, s2));
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('ids', () => {
  const identity = {
    tenantId: 't',
    sessionId: 's',
    tier: 1,
    generation: 1,
    fromSeq: 1,
    toSeq: 40,
    policyId: 'p',
    attempt: 0,
  };

  it('derives the compaction id from its content, pinned so that other languages can reproduce it', () => {
    const expected = sha256Hex(
      '{"attempt":0,"fromSeq":1,"generation":1,"kind":"tidemark.compaction","policyId":"p","sessionId":"s","tenantId":"t","tier":1,"toSeq":40}',
    );
    expect(compactionIdOf(identity)).toBe(expected);
    expect(markerIdOf(expected)).toBe(sha256Hex(`{"compactionId":"${expected}","kind":"tidemark.marker"}`));
  });

  it('gives another id when anything identifying changes', () => {
    const ids = new Set(
      [
        identity,
        { ...identity, tenantId: 'u' },
        { ...identity, sessionId: 'u' },
        { ...identity, tier: 2 },
        { ...identity, generation: 2 },
        { ...identity, fromSeq: 2 },
        { ...identity, toSeq: 41 },
        { ...identity, policyId: 'q' },
        { ...identity, attempt: 1 },
      ].map(compactionIdOf),
    );
    expect(ids.size).toBe(9);
  });

  it('derives the policy id from the policy content alone', () => {
    expect(policyIdOf(definePolicy())).toBe(policyIdOf(definePolicy({ l1EveryTurns: 40 })));
    expect(policyIdOf(definePolicy({ digestTokenBudget: 500 }))).not.toBe(policyIdOf(definePolicy()));
    expect(contextHashOf('x')).toBe(sha256Hex('x'));
  });
});

describe('turn content hash', () => {
  const turn = generateSession(4, { turns: 40, activity: 1 }).find((t) => t.changes.length > 1);
  it('ignores what a resend may mint afresh (turnId, timestamp), and sees every other field', () => {
    const base = turnContentHash(turn!);
    expect(turnContentHash({ ...turn!, turnId: 'resent', timestamp: 1 })).toBe(base);
    for (const changed of [
      { seq: turn!.seq + 1 },
      { role: 'user' as const },
      { content: `${turn!.content}.` },
      { tokenCount: turn!.tokenCount + 1 },
      { changes: [] },
      { sessionId: 'other' },
      { original: { format: 'openai-chat', json: '{}' } },
    ]) {
      expect(turnContentHash({ ...turn!, ...changed }), JSON.stringify(changed)).not.toBe(base);
    }
    // The same content, its change fields listed in another order, is the same turn.
    const reordered = turn!.changes.map((c) => Object.fromEntries(Object.entries(c).reverse()) as typeof c);
    expect(turnContentHash({ ...turn!, changes: reordered })).toBe(base);
  });
});

describe('token estimate', () => {
  it('is a quarter of the characters, rounded up', () => {
    expect([
      estimateTokens(''),
      estimateTokens('abc'),
      estimateTokens('abcd'),
      estimateTokens('abcde'),
    ]).toEqual([0, 1, 1, 2]);
  });

  it('fits any text to any budget, leaving text that fits untouched', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 400 }), fc.nat({ max: 120 }), (text, budget) => {
        const fitted = fitToBudget(text, budget);
        expect(estimateTokens(fitted)).toBeLessThanOrEqual(budget);
        if (estimateTokens(text) <= budget) expect(fitted).toBe(text);
        expect(fitted).not.toMatch(/[\ud800-\udbff]$/);
      }),
    );
  });
});
