import { describe, expect, it } from 'vitest';
import { ParsedItems } from '../src/parsed-items.js';
import { readStateAt } from '../src/projection-read.js';

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
  it('answers an item it has seen with the very value it parsed, equal to parsing it (open)', () => {
    const items = new ParsedItems(4);
    const json = itemJson('i-1');
    const first = items.parse('t/s', 'i-1', json);
    expect(first).toEqual({ ...JSON.parse(json), end: null });
    // The same object, not a second parse: the memory is what saves the work. A fresh copy of the same
    // bytes (as each Redis reply brings) is the same item.
    expect(items.parse('t/s', 'i-1', `${json} `.trimEnd())).toBe(first);
  });

  it('never answers for different bytes under the same id: the bytes Redis sent decide', () => {
    const items = new ParsedItems(4);
    const before = items.parse('t/s', 'i-1', itemJson('i-1', 'first'));
    // Another deployment (or a rebuilt store) may hold other JSON under the same id.
    const after = items.parse('t/s', 'i-1', itemJson('i-1', 'second'));
    expect(after.name).toBe('second');
    expect(before.name).toBe('first');
    expect(items.parse('t/s', 'i-1', itemJson('i-1', 'first')).name).toBe('first');
  });

  it('keeps the items of two sessions that use one id apart: each is a hit when seen again', () => {
    // Item ids repeat across sessions (a runtime's `call-1` is in every one). Keyed by the id alone,
    // sessions interleaved evicted each other's entry on every query, and nearly every lookup parsed.
    const items = new ParsedItems(8);
    const a = items.parse('t/a', 'call-1', itemJson('call-1', 'build'));
    const b = items.parse('t/b', 'call-1', itemJson('call-1', 'deploy'));
    expect(items.parse('t/a', 'call-1', itemJson('call-1', 'build'))).toBe(a);
    expect(items.parse('t/b', 'call-1', itemJson('call-1', 'deploy'))).toBe(b);
    expect([a.name, b.name]).toEqual(['build', 'deploy']);
  });

  it('freezes what it shares, so no caller can change another caller’s answer', () => {
    const items = new ParsedItems(4);
    const value = items.parse('t/s', 'i-1', itemJson('i-1'));
    expect(Object.isFrozen(value)).toBe(true);
    expect(() => {
      (value as { openedSeq: number }).openedSeq = 9;
    }).toThrow(TypeError);
  });

  it('holds at most two generations, keeping what is still in use', () => {
    const items = new ParsedItems(3);
    const kept = items.parse('t/s', 'kept', itemJson('kept'));
    const zero = items.parse('t/s', 'n-0', itemJson('n-0'));
    for (let i = 1; i < 50; i++) {
      items.parse('t/s', `n-${i}`, itemJson(`n-${i}`));
      // In use every round: a hit in the previous generation moves it forward, so it is never dropped.
      expect(items.parse('t/s', 'kept', itemJson('kept'))).toBe(kept);
      expect(items.size).toBeLessThanOrEqual(6);
    }
    const again = items.parse('t/s', 'n-0', itemJson('n-0'));
    // Long unused, so dropped: parsed again (a new object with the same content).
    expect(again).not.toBe(zero);
    expect(again).toEqual(zero);
  });
});

describe('a state-at answer read with ParsedItems', () => {
  // The script's reply (projection-state-at.lua): applied seq; open ids, items, ends; closed ids, items,
  // ends; disposition and artifact members; the lookups. Two items open at seq 3, one closed at seq 8.
  const ended = JSON.stringify({ type: 'closed', outcome: 'ok', detail: null, seq: 8 });
  const reply = () => [
    10,
    ['i-1', 'i-2'],
    [itemJson('i-1'), itemJson('i-2')],
    [null, null],
    ['i-3'],
    [itemJson('i-3')],
    [ended],
    [],
    [],
    [],
    [],
    [],
    [],
  ];
  const query = {
    tenantId: 't',
    sessionId: 's',
    fromSeq: 1,
    toSeq: 10,
    itemIds: [],
    itemKeys: [],
    paths: [],
  };

  it('shares an open item between answers, and gives a closed one its end in a copy of its own', () => {
    const items = new ParsedItems(8);
    const first = readStateAt(query, reply(), items);
    const second = readStateAt(query, reply(), items);
    expect(first.open.map((item) => item.itemId)).toEqual(['i-1', 'i-2']);
    expect(second.open[0]).toBe(first.open[0]);
    expect(first.open[0]).toEqual({ ...JSON.parse(itemJson('i-1')), end: null });
    expect(first.closed[0]).toEqual({ ...JSON.parse(itemJson('i-3')), end: JSON.parse(ended) as unknown });
    expect(second.closed[0]).not.toBe(first.closed[0]);
    // The shared open value of i-3 was not given the end: an answer before seq 8 sees it open.
    const before = readStateAt({ ...query, toSeq: 7 }, reply(), items);
    expect(before.closed[0]?.end ?? null).toBeNull();
  });
});
