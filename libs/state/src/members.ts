import type { RedisClient } from './redis-client.js';
import { memberKey } from './keys.js';

// The last Kafka group member id of a stable service instance (INSTANCE_ID), so that a restarted instance
// can leave as the member its killed predecessor left behind (see @tidemark/contract's MemberLedger).
// Not rebuildable state and not needed for correctness: losing it costs one session timeout of waiting.

/** How long a member id is remembered: far longer than any restart, short enough to clean up after itself. */
const rememberSeconds = 7 * 24 * 3600;

export function redisMemberLedger(
  redis: RedisClient,
  options: { readonly prefix: string; readonly groupId: string; readonly instanceId: string },
): { previous(): Promise<string | null>; record(memberId: string): Promise<void> } {
  const key = memberKey(options.prefix, options.groupId, options.instanceId);
  return {
    previous: () => redis.get(key),
    record: async (memberId) => {
      await redis.set(key, memberId, 'EX', rememberSeconds);
    },
  };
}

/**
 * The consumer option for a service's group: a ledger under `<service>:<INSTANCE_ID>` when the instance
 * has a stable id, none otherwise (each start then joins as a new member).
 */
export function membershipOption(
  redis: RedisClient,
  options: {
    readonly prefix: string;
    readonly groupId: string;
    readonly service: string;
    readonly instanceId: string | undefined;
  },
): { membership?: ReturnType<typeof redisMemberLedger> } {
  const { instanceId } = options;
  if (instanceId === undefined) return {};
  return {
    membership: redisMemberLedger(redis, { ...options, instanceId: `${options.service}:${instanceId}` }),
  };
}
