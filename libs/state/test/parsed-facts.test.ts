import { describe, expect, it } from 'vitest';
import { ParsedFacts } from '../src/parsed-facts.js';

describe('ParsedFacts', () => {
  it('answers a string it has seen with the very value it parsed, equal to parsing it', () => {
    const facts = new ParsedFacts(4);
    const json = '{"itemId":"i-1","kind":"tool_call","openedSeq":3}';
    const first = facts.parse<{ itemId: string }>(json);
    expect(first).toEqual(JSON.parse(json));
    // The same object, not a second parse: the cache is what saves the work.
    expect(facts.parse(json)).toBe(first);
    // A different string is a different value, even when equal in content to another.
    expect(facts.parse('{"itemId":"i-2"}')).toEqual({ itemId: 'i-2' });
  });

  it('freezes what it shares, so no caller can change another caller’s answer', () => {
    const facts = new ParsedFacts(4);
    const value = facts.parse<{ seq: number }>('{"seq":1}');
    expect(Object.isFrozen(value)).toBe(true);
    expect(() => {
      value.seq = 2;
    }).toThrow(TypeError);
  });

  it('holds at most two generations, keeping what is still in use', () => {
    const facts = new ParsedFacts(3);
    const kept = facts.parse<object>('{"kept":true}');
    const zero = facts.parse<object>('{"n":0}');
    for (let i = 0; i < 50; i++) {
      facts.parse(`{"n":${i}}`);
      // In use every round: a hit in the previous generation moves it forward, so it is never dropped.
      expect(facts.parse('{"kept":true}')).toBe(kept);
      expect(facts.size).toBeLessThanOrEqual(6);
    }
    const again = facts.parse<object>('{"n":0}');
    // Long unused, so dropped: parsed again (a new object with the same content).
    expect(again).not.toBe(zero);
    expect(again).toEqual(zero);
    expect(facts.size).toBeLessThanOrEqual(6);
  });
});
