import { describe, expect, it } from 'vitest';
import { minimumRedisVersion, redisTooOld } from '../src/redis.js';

// What logRedisOutages says, once connected, of the Redis it reached: INFO server replies as Redis
// sends them (CRLF lines, the version among other fields).
const info = (version: string) =>
  `# Server\r\nredis_version:${version}\r\nredis_git_sha1:00000000\r\nredis_mode:standalone\r\n`;

describe('redisTooOld', () => {
  it('names a Redis older than 6.2, its version and what fails', () => {
    for (const version of ['6.0.16', '5.0.14', '6.1.9', '4.0.0']) {
      expect(redisTooOld(info(version))).toBe(
        `Redis ${version} is older than ${minimumRedisVersion}: the projection's reads call ZMSCORE, which it lacks, and will fail`,
      );
    }
  });

  it('passes 6.2 and every later version, compared part by part (not as text)', () => {
    for (const version of ['6.2.0', '6.2.14', '7.0.15', '7.2.4', '10.0.0', '6.10.0']) {
      expect(redisTooOld(info(version))).toBeNull();
    }
  });

  it('gives a reply without a version (a proxy in front of Redis) the benefit of the doubt', () => {
    expect(redisTooOld('# Server\r\nproxy_mode:yes\r\n')).toBeNull();
  });
});
