import type { Logger } from 'pino';

/**
 * The connection events of an ioredis client that `logRedisOutages` listens to (typed here, so this
 * package needs no Redis client of its own).
 */
export interface RedisConnectionEvents {
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'reconnecting' | 'ready' | 'end', listener: () => void): unknown;
  /** INFO server: the version of the Redis connected to. */
  info(section: 'server'): Promise<string>;
}

/** The oldest Redis the stores run on: the projection's state-at script calls ZMSCORE (6.2). */
export const minimumRedisVersion = '6.2.0';

/**
 * Why the Redis that answered `INFO server` with `info` is too old for Tidemark, or null (new enough, or
 * no version in the reply: a proxy in front of Redis, say, is given the benefit of the doubt).
 */
export function redisTooOld(info: string): string | null {
  const version = /^redis_version:(\S+)/m.exec(info)?.[1];
  if (version === undefined) return null;
  const parts = (text: string) => text.split('.').map((part) => Number.parseInt(part, 10) || 0);
  const [have, need] = [parts(version), parts(minimumRedisVersion)];
  for (let i = 0; i < need.length; i++) {
    const [a, b] = [have[i] ?? 0, need[i]!];
    if (a !== b) {
      return a > b
        ? null
        : `Redis ${version} is older than ${minimumRedisVersion}: the projection's reads call ZMSCORE, which it lacks, and will fail`;
    }
  }
  return null;
}

/**
 * Tells a Redis outage as one story: one warn when the connection is lost or cannot be made, one info
 * when it is ready again (with how long it was away, `downMs`), and each connection error in between at
 * debug. It is also the connection's 'error' listener, without which ioredis prints every failed
 * reconnect as an unstructured stack trace on stderr. On every connection it also reads the server's
 * version and logs an error for one older than minimumRedisVersion. Attach it where the connection is
 * made (`name` says which one, in each line); returns the connection.
 */
export function logRedisOutages<R extends RedisConnectionEvents>(redis: R, logger: Logger, name: string): R {
  let outage: { since: number; errors: number } | null = null;
  const lost = (reason: string): boolean => {
    if (outage !== null) return false;
    outage = { since: Date.now(), errors: 0 };
    logger.warn({ redis: name, reason }, 'redis unreachable');
    return true;
  };
  redis.on('error', (error) => {
    if (lost(error.message) || outage === null) return;
    outage.errors += 1;
    logger.debug({ redis: name, reason: error.message }, 'redis connection error');
  });
  // ioredis is reconnecting: the connection closed without being asked to.
  redis.on('reconnecting', () => void lost('connection lost'));
  redis.on('ready', () => {
    // Once per connection (a reconnect may reach another server): an old Redis is told of plainly, not
    // left to fail as "unknown command" on the first read that needs it.
    redis.info('server').then(
      (info) => {
        const tooOld = redisTooOld(info);
        if (tooOld !== null) logger.error({ redis: name, required: minimumRedisVersion }, tooOld);
      },
      (error: unknown) => logger.debug({ redis: name, err: error }, 'redis version not read'),
    );
    if (outage === null) return;
    logger.info(
      { redis: name, downMs: Date.now() - outage.since, errors: outage.errors },
      'redis reachable again',
    );
    outage = null;
  });
  // Closed for good (quit, disconnect): no outage to tell of any more.
  redis.on('end', () => {
    outage = null;
  });
  return redis;
}

/**
 * Whether a failed command failed for want of Redis (the connection closed under it, or its retries ran
 * out while Redis was away): part of an outage logRedisOutages already tells of, not an error of its own.
 */
export function isRedisOutageError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return (
    error.name === 'AbortError' ||
    error.name === 'MaxRetriesPerRequestError' ||
    /Connection is closed|ECONNREFUSED|ECONNRESET|Stream isn't writeable/.test(error.message)
  );
}
