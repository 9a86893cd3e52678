import { describe, expect, it } from 'vitest';
import type { Compaction, DeadLetter, MarkerEmitted, MarkerInvalid, TurnEvent } from '@tidemark/core';
import { validateEvent } from '@tidemark/contract';
import { vectors } from './vectors.js';

const of = <T>(name: string): T => vectors.find((v) => v.name === name)!.value as T;
const turn = of<TurnEvent>('turn-event');
const compaction = of<Compaction>('compaction');
const emitted = of<MarkerEmitted>('marker-emitted');
const invalid = of<MarkerInvalid>('marker-invalid');
const deadLetter = of<DeadLetter>('dead-letter');

describe('validateEvent', () => {
  it('accepts every vector', () => {
    expect(validateEvent('turns', turn)).toEqual({ ok: true });
    expect(validateEvent('compactions', compaction)).toEqual({ ok: true });
    expect(validateEvent('markers', emitted)).toEqual({ ok: true });
    expect(validateEvent('markers', invalid)).toEqual({ ok: true });
    expect(validateEvent('deadletter', deadLetter)).toEqual({ ok: true });
  });

  it('refuses a turn with an empty id as missing_ids and an out-of-range field as invalid_event', () => {
    expect(validateEvent('turns', { ...turn, turnId: '' })).toMatchObject({
      ok: false,
      reason: 'missing_ids',
    });
    expect(validateEvent('turns', { ...turn, tenantId: '' })).toMatchObject({
      ok: false,
      reason: 'missing_ids',
    });
    expect(validateEvent('turns', { ...turn, seq: 0 })).toMatchObject({ ok: false, reason: 'invalid_event' });
    expect(validateEvent('turns', { ...turn, tokenCount: -1 })).toMatchObject({
      ok: false,
      reason: 'invalid_event',
    });
  });

  it('leaves change-level rules to the fold, so one bad change does not cost the whole turn', () => {
    const badChange = {
      ...turn,
      changes: [
        { type: 'item_disposed', itemKey: 'k', disposition: 'superseded', reason: 'r', supersededBy: null },
      ],
    } as TurnEvent;
    expect(validateEvent('turns', badChange)).toEqual({ ok: true });
  });

  it('refuses a compaction with empty ids, a bad span or a marker that does not match its node', () => {
    expect(validateEvent('compactions', { ...compaction, compactionId: '' })).toMatchObject({
      reason: 'missing_ids',
    });
    expect(
      validateEvent('compactions', { ...compaction, marker: { ...compaction.marker, markerId: '' } }),
    ).toMatchObject({ reason: 'missing_ids', message: 'marker.markerId is empty' });
    expect(
      validateEvent('compactions', { ...compaction, span: { ...compaction.span, fromSeq: 0 } }),
    ).toMatchObject({ reason: 'invalid_event' });
    expect(
      validateEvent('compactions', { ...compaction, span: { ...compaction.span, toSeq: 0 } }),
    ).toMatchObject({ reason: 'invalid_event' });
    expect(validateEvent('compactions', { ...compaction, tier: 0 })).toMatchObject({
      reason: 'invalid_event',
    });
    expect(validateEvent('compactions', { ...compaction, tokenCount: -3 })).toMatchObject({
      reason: 'invalid_event',
    });
    expect(
      validateEvent('compactions', { ...compaction, marker: { ...compaction.marker, depth: 3 } }),
    ).toMatchObject({ reason: 'invalid_event' });
    expect(validateEvent('compactions', { ...compaction, children: [] })).toMatchObject({
      reason: 'invalid_event',
    });
  });

  it('refuses a marker decision with empty ids or out-of-range positions, and an invalid one without violations', () => {
    expect(validateEvent('markers', { ...emitted, markerId: '' })).toMatchObject({ reason: 'missing_ids' });
    expect(validateEvent('markers', { ...emitted, depth: 0 })).toMatchObject({ reason: 'invalid_event' });
    expect(validateEvent('markers', { ...emitted, l0Offset: -1 })).toMatchObject({ reason: 'invalid_event' });
    expect(validateEvent('markers', { ...invalid, violations: [] })).toMatchObject({
      reason: 'invalid_event',
    });
    expect(
      validateEvent('markers', { ...invalid, fallback: { ...invalid.fallback, compactionId: null } }),
    ).toMatchObject({ reason: 'invalid_event' });
    const start = { markerId: null, compactionId: null, toSeq: 0, l0Partition: 3, l0Offset: null };
    expect(validateEvent('markers', { ...invalid, fallback: start })).toEqual({ ok: true });
  });

  it('refuses a dead letter without its origin or service', () => {
    expect(validateEvent('deadletter', { ...deadLetter, originalTopic: '' })).toMatchObject({
      reason: 'missing_ids',
    });
    expect(validateEvent('deadletter', { ...deadLetter, offset: -1 })).toMatchObject({
      reason: 'invalid_event',
    });
  });
});
