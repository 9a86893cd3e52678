import { describe, expect, it } from 'vitest';
import { ParsedItems } from '../src/parsed-items.js';

const itemJson = (id: string, name = 'run tests') =>
  JSON.stringify({
    itemId: id,
    kind: 'tool_call',
    name,
    detail: null,
    handle: null,
    logPath: null,
    openedSeq: 3,
  });

describe('ParsedItems', () => {
  it('answers an item it has seen with the very value it parsed, equal to parsing it', () => {
    const items = new ParsedItems(4);
    const json = itemJson('i-1');
    const first = items.parse('i-1', json);
    expect(first).toEqual(JSON.parse(json));
    // The same object, not a second parse: the memory is what saves the work. A fresh copy of the same
    // bytes (as each Redis reply brings) is the same item.
    expect(items.parse('i-1', `${json} `.trimEnd())).toBe(first);
  });

  it('never answers for different bytes under the same id: the bytes Redis sent decide', () => {
    const items = new ParsedItems(4);
    const before = items.parse('i-1', itemJson('i-1', 'first'));
    // Another deployment (or a rebuilt store) may hold other JSON under the same id.
    const after = items.parse('i-1', itemJson('i-1', 'second'));
    expect(after.name).toBe('second');
    expect(before.name).toBe('first');
    expect(items.parse('i-1', itemJson('i-1', 'first')).name).toBe('first');
  });

  it('freezes what it shares, so no caller can change another caller’s answer', () => {
    const items = new ParsedItems(4);
    const value = items.parse('i-1', itemJson('i-1'));
    expect(Object.isFrozen(value)).toBe(true);
    expect(() => {
      (value as { openedSeq: number }).openedSeq = 9;
    }).toThrow(TypeError);
  });

  it('holds at most two generations, keeping what is still in use', () => {
    const items = new ParsedItems(3);
    const kept = items.parse('kept', itemJson('kept'));
    const zero = items.parse('n-0', itemJson('n-0'));
    for (let i = 1; i < 50; i++) {
      items.parse(`n-${i}`, itemJson(`n-${i}`));
      // In use every round: a hit in the previous generation moves it forward, so it is never dropped.
      expect(items.parse('kept', itemJson('kept'))).toBe(kept);
      expect(items.size).toBeLessThanOrEqual(6);
    }
    const again = items.parse('n-0', itemJson('n-0'));
    // Long unused, so dropped: parsed again (a new object with the same content).
    expect(again).not.toBe(zero);
    expect(again).toEqual(zero);
  });
});
