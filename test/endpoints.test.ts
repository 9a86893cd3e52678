import { describe, expect, it } from 'vitest';
import { endpointsFromEnv } from './infra/endpoints.js';

describe('endpoints from the environment', () => {
  it('uses all three when all three are set, splitting a broker list', () => {
    expect(
      endpointsFromEnv({
        KAFKA_BROKERS: '127.0.0.1:1, 127.0.0.1:2',
        SCHEMA_REGISTRY_URL: 'http://127.0.0.1:3/apis/ccompat/v7',
        REDIS_URL: 'redis://127.0.0.1:4',
      }),
    ).toEqual({
      kafkaBrokers: ['127.0.0.1:1', '127.0.0.1:2'],
      schemaRegistryUrl: 'http://127.0.0.1:3/apis/ccompat/v7',
      redisUrl: 'redis://127.0.0.1:4',
    });
  });

  it('falls through to the next source when none is set', () => {
    expect(endpointsFromEnv({})).toBeUndefined();
  });

  it('refuses a partial set rather than mixing sources', () => {
    expect(() => endpointsFromEnv({ KAFKA_BROKERS: '127.0.0.1:1' })).toThrow(/all three/);
  });
});
