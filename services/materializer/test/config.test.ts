import { ConfigError, parseConfig } from '@tidemark/service';
import { describe, expect, it } from 'vitest';
import { materializerConfigSchema } from '../src/index.js';

describe('materializer config', () => {
  it('runs against the local stack with no environment at all', () => {
    const config = parseConfig(materializerConfigSchema, {});
    expect(config).toMatchObject({
      MATERIALIZER_GROUP_ID: 'tidemark-materializer',
      REDIS_PREFIX: 'tidemark:',
      EPOCH_CHECK_MS: 1_000,
      PARTITIONS_CONSUMED_CONCURRENTLY: 4,
      CONSUMER_SESSION_TIMEOUT_MS: 30_000,
      PROVISION_TOPICS: true,
    });
  });

  it('reads "false" as false', () => {
    expect(parseConfig(materializerConfigSchema, { PROVISION_TOPICS: 'false' }).PROVISION_TOPICS).toBe(false);
  });

  it('fails at start naming every bad variable', () => {
    const parse = () =>
      parseConfig(materializerConfigSchema, { EPOCH_CHECK_MS: '0', CONSUMER_SESSION_TIMEOUT_MS: '1000' });
    expect(parse).toThrow(ConfigError);
    try {
      parse();
    } catch (error) {
      expect((error as ConfigError).variables).toEqual(['EPOCH_CHECK_MS', 'CONSUMER_SESSION_TIMEOUT_MS']);
    }
  });
});
