import { describe, expect, it } from 'vitest';
import { commonConfig, ConfigError, parseConfig, z } from '../src/index.js';

const schema = z.object({
  ...commonConfig,
  BATCH_SIZE: z.coerce.number().int().positive().default(100),
  STRICT: z.stringbool().default(true),
});

describe('parseConfig', () => {
  it('runs against the local stack when nothing is set', () => {
    const config = parseConfig(schema, {});
    expect(config.KAFKA_BROKERS).toEqual(['127.0.0.1:19092']);
    expect(config.REDIS_URL).toBe('redis://127.0.0.1:16379');
    expect(config.TOPIC_PREFIX).toBe('');
    expect(config.BATCH_SIZE).toBe(100);
  });

  it('splits a broker list and reads typed values', () => {
    const config = parseConfig(schema, { KAFKA_BROKERS: 'a:1, b:2,', BATCH_SIZE: '7', STRICT: 'false' });
    expect(config.KAFKA_BROKERS).toEqual(['a:1', 'b:2']);
    expect(config.BATCH_SIZE).toBe(7);
    // z.stringbool, not z.coerce.boolean, which would read "false" as true.
    expect(config.STRICT).toBe(false);
  });

  it('treats an empty variable as unset', () => {
    expect(parseConfig(schema, { BATCH_SIZE: '' }).BATCH_SIZE).toBe(100);
  });

  it('fails fast naming every bad variable', () => {
    let caught: unknown;
    try {
      parseConfig(schema, { BATCH_SIZE: '-3', REDIS_URL: 'not a url', HTTP_PORT: '70000' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const error = caught as ConfigError;
    expect([...error.variables].sort()).toEqual(['BATCH_SIZE', 'HTTP_PORT', 'REDIS_URL']);
    expect(error.message).toMatch(/BATCH_SIZE: /);
  });
});
