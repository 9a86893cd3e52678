import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  lookupBounds,
  lookupMember,
  lookupMemberFact,
  memberFact,
  framesLayout,
  plansLayout,
  projectionLayout,
  sessionKeysPattern,
  sessionStoreKey,
  windowsLayout,
  sessionKeys,
  spanMember,
} from '../src/keys.js';

// The index encodings the Lua scripts rely on, checked without Redis: Redis orders zset members of equal
// score by their bytes (memcmp), which for these ASCII-headed strings is the UTF-8 byte order.
const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');
const inRange = (member: string, [max, min]: [string, string]): boolean => {
  const exclusiveMax = max.slice(1);
  const inclusiveMin = min.slice(1);
  return (
    Buffer.compare(bytes(member), bytes(inclusiveMin)) >= 0 &&
    Buffer.compare(bytes(member), bytes(exclusiveMax)) < 0
  );
};

describe('projection keys', () => {
  it("share one hash tag per session, so a session's keys share a cluster slot", () => {
    const keys = Object.values(sessionKeys('p:', 'tenant', 'session'));
    for (const key of keys) expect(key).toMatch(/^p:proj:\{tenant\/session\}:/);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('keep apart sessions whose ids would join to the same text (tenant a, session x/s; tenant a/x, session s)', () => {
    const one = sessionKeys('p:', 'a', 'x/s');
    const other = sessionKeys('p:', 'a/x', 's');
    for (const part of Object.keys(one) as (keyof typeof one)[]) expect(one[part]).not.toBe(other[part]);
    expect(sessionStoreKey('p:', 'resume', { tenantId: 'a', sessionId: 'x/s' })).not.toBe(
      sessionStoreKey('p:', 'resume', { tenantId: 'a/x', sessionId: 's' }),
    );
  });

  it('are injective and slot-local for any ids: `/ { } : * %`, unicode, 1 KB ids', () => {
    // Every key a session has in any store (the windows' one under one namespace).
    const allKeys = (tenantId: string, sessionId: string): string[] => {
      const ref = { tenantId, sessionId };
      const windows = sessionStoreKey('p:', 'cmp:g1:x', ref);
      return [
        ...Object.values(sessionKeys('p:', tenantId, sessionId)),
        ...['frame', 'decided', 'frame-seen', 'resume', 'resume-nodes', 'resume-ctx', 'resume-seen'].map(
          (store) => sessionStoreKey('p:', store, ref),
        ),
        windows,
      ];
    };
    // Redis Cluster's hash tag: the text between the first `{` and the first `}` after it, if not empty.
    const hashTag = (key: string): string => {
      const open = key.indexOf('{');
      const close = open < 0 ? -1 : key.indexOf('}', open + 1);
      return close > open + 1 ? key.slice(open + 1, close) : key;
    };
    const hostile = fc.oneof(
      fc.string({ unit: fc.constantFrom('a', '/', '%', '2', 'F', '{', '}', ':', '*', '\\', '?', '[') }),
      fc.string({ unit: 'grapheme', maxLength: 20 }),
      fc.string({ minLength: 1_000, maxLength: 1_100, unit: fc.constantFrom('x', '/', '}', '{') }),
    );
    fc.assert(
      fc.property(hostile, hostile, hostile, hostile, (t1, s1, t2, s2) => {
        const one = allKeys(t1, s1);
        // One session's keys: all different, all in one cluster slot (one script may touch them all).
        expect(new Set(one).size).toBe(one.length);
        expect(new Set(one.map(hashTag)).size).toBe(1);
        if (t1 === t2 && s1 === s2) return;
        // Two sessions never share a key (they may share a slot: a `}` in an id shortens the tag).
        const other = new Set(allKeys(t2, s2));
        for (const key of one) expect(other.has(key)).toBe(false);
      }),
      { numRuns: 1_000 },
    );
  });

  it('scan only one store under a prefix, with glob characters in the prefix escaped', () => {
    expect(sessionKeysPattern('a*b?:', 'proj')).toBe('a\\*b\\?:proj:\\{*');
  });

  it('give every store its own epoch, lock and session patterns', () => {
    const layouts = [
      projectionLayout,
      framesLayout,
      plansLayout,
      (p: string) => windowsLayout(p, 'g1:x'),
    ].map((layout) => layout('p:'));
    const all = layouts.flatMap((l) => [l.epochKey, l.lockKey, ...l.statePatterns]);
    expect(new Set(all).size).toBe(all.length);
    expect(layouts.map((l) => l.epochKey)).toEqual([
      'p:proj:epoch:6',
      'p:frames:epoch:4',
      'p:resume:epoch:4',
      'p:cmp:g1:x:epoch:5',
    ]);
  });

  it('give a lookup range that holds exactly the members of its key at or before the seq', () => {
    const key = fc.string({ minLength: 1, maxLength: 12, unit: 'grapheme' });
    fc.assert(
      fc.property(
        fc.array(fc.tuple(key, fc.integer({ min: 1, max: 5_000 }), fc.nat(20)), {
          minLength: 1,
          maxLength: 40,
        }),
        fc.nat(),
        fc.integer({ min: -1, max: 1 }),
        key,
        fc.boolean(),
        (facts, pick, delta, other, aboutAFact) => {
          // Ask about a fact's own key around its own seq (the edges), or about anything.
          const [factKey, factSeq] = facts[pick % facts.length]!;
          const asked = aboutAFact ? factKey : other;
          const toSeq = Math.max(1, factSeq + delta);
          const members = facts.map(([k, seq, index]) => ({
            k,
            seq,
            index,
            member: lookupMember(k, seq, index, `{"k":1}`),
          }));
          const range = lookupBounds(asked, toSeq);
          for (const m of members) {
            expect(inRange(m.member, range)).toBe(m.k === asked && m.seq <= toSeq);
          }
          // The greatest member in range is the latest fact (by seq, then by index in its turn).
          const hits = members.filter((m) => inRange(m.member, range));
          if (hits.length > 0) {
            const greatest = hits.reduce((a, b) =>
              Buffer.compare(bytes(a.member), bytes(b.member)) >= 0 ? a : b,
            );
            const latest = Math.max(...hits.map((m) => m.seq * 1000 + m.index));
            expect(greatest.seq * 1000 + greatest.index).toBe(latest);
          }
        },
      ),
    );
  });

  it('keep the fact recoverable from every member', () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.integer({ min: 1 }),
        fc.nat(999_999),
        fc.json(),
        (key, seq, index, fact) => {
          expect(lookupMemberFact(lookupMember(key, seq, index, fact))).toBe(fact);
          expect(memberFact(spanMember(index, fact))).toBe(fact);
        },
      ),
    );
  });
});
