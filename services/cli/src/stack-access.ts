import type { Bus } from '@tidemark/contract';
import {
  createResumeClient,
  policiesOf,
  resumeConfigSchema,
  type ResumeLibraryClient,
} from '@tidemark/resume';
import { commonConfig, createLogger, logRedisOutages, parseConfig, z } from '@tidemark/service';
import { provision, type Env } from './pipeline.js';
import { connectRedis, type RedisClient } from '@tidemark/state';

/** What a command reads the stack with: the bus, a Redis connection and an in-process resume client. */
export interface StackAccess {
  readonly config: z.infer<z.ZodObject<typeof commonConfig>>;
  readonly bus: Bus;
  readonly redis: RedisClient;
  readonly client: ResumeLibraryClient;
  close(): Promise<void>;
}

/**
 * Opens the stack the environment names, quietly (a command's stdout is its answer, or a protocol's), with
 * the resume configuration's policies and staleness bound, so `stale` reads as the service's would.
 */
export async function openStackAccess(env: Env, name: string): Promise<StackAccess> {
  const config = parseConfig(z.object(commonConfig), env);
  const quiet = createLogger(name, 'silent');
  const bus = await provision(env, quiet);
  const redis = logRedisOutages(
    connectRedis(config, { lazyConnect: true, maxRetriesPerRequest: 2 }),
    quiet,
    name,
  );
  const resume = parseConfig(resumeConfigSchema, env);
  const client = createResumeClient({
    redis,
    redisPrefix: config.REDIS_PREFIX,
    bus,
    policyFor: policiesOf(resume).policyFor,
    staleAfterMs: resume.STALE_AFTER_MS,
  });
  return {
    config,
    bus,
    redis,
    client,
    async close() {
      await client.close();
      redis.disconnect();
      await bus.disconnect();
    },
  };
}
