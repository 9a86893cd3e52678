import { describe, expect, it } from 'vitest';
import { sessionKey, subjectOf, topicNames, topicSettings } from '@tidemark/contract';

describe('topics', () => {
  it('names every role under a prefix', () => {
    expect(topicNames()).toEqual({
      turns: 'turns.l0',
      compactions: 'compactions',
      markers: 'markers',
      revocations: 'marker-revocations',
      regressions: 'regressions',
      deadletter: 'deadletter',
    });
    expect(topicNames('t-1.').turns).toBe('t-1.turns.l0');
  });

  it('keys every record by tenant/session and names subjects by topic and record', () => {
    expect(sessionKey('acme', 's-1')).toBe('acme/s-1');
    expect(subjectOf('turns.l0', 'TurnEvent')).toBe('turns.l0-tidemark.v1.TurnEvent');
  });

  it('keeps event topics forever with the configured partitions, and dead letters on one partition', () => {
    const turns = topicSettings('turns', 6);
    expect(turns.numPartitions).toBe(6);
    expect(turns.configEntries).toEqual(
      expect.arrayContaining([
        { name: 'retention.ms', value: '-1' },
        { name: 'cleanup.policy', value: 'delete' },
      ]),
    );
    expect(topicSettings('markers').numPartitions).toBe(4);
    expect(topicSettings('deadletter', 6).numPartitions).toBe(1);
  });
});
