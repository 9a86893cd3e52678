import { createLogger, logRedisOutages, parseConfig } from '@tidemark/service';
import { Projection, connectRedis } from '@tidemark/state';
import { materializerConfigSchema } from './config.js';
import { create as createMaterializer } from './materializer.js';

// `pnpm --filter @tidemark/materializer rebuild [--run] [--timeout-ms N]`: rebuilds the projection from L0
// on demand. It declares the projection lost (drops its epoch and marks a rebuild as asked for: readers
// wait or answer `rebuilding` from that moment), then
//   default: waits for the running materializer, which notices within EPOCH_CHECK_MS and replays L0;
//   --run:   replays L0 in this process (no materializer may be running in the group: its offsets are reset).
// Exits 0 once the rebuilt projection has caught up with L0, 1 if that took longer than the timeout.
const args = process.argv.slice(2);
const run = args.includes('--run');
const timeoutArg = args.indexOf('--timeout-ms');
const timeoutMs = timeoutArg >= 0 ? Number(args[timeoutArg + 1]) : 300_000;
const config = parseConfig(materializerConfigSchema);
const logger = createLogger('materializer-rebuild', config.LOG_LEVEL);

const redis = logRedisOutages(connectRedis(config, { maxRetriesPerRequest: null }), logger, 'rebuild');
const projection = new Projection(redis, { prefix: config.REDIS_PREFIX });
try {
  await projection.invalidate('rebuild command');
  logger.info({ run }, 'projection invalidated');
  if (run) {
    const materializer = createMaterializer(config, { logger, redis });
    await materializer.run();
    try {
      await materializer.caughtUp(timeoutMs);
    } finally {
      await materializer.stop();
    }
  } else {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const [epoch, mark] = await Promise.all([projection.epoch(), projection.rebuilding()]);
      if (epoch !== null && mark === null) break;
      if (Date.now() > deadline)
        throw new Error(`no materializer rebuilt the projection within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  logger.info({ epoch: await projection.epoch() }, 'projection rebuilt');
} catch (error) {
  logger.error({ err: error }, 'rebuild failed');
  process.exitCode = 1;
} finally {
  redis.disconnect();
}
