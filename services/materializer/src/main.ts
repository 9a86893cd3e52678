import { createLogger, parseConfig, runMain } from '@tidemark/service';
import { materializerConfigSchema } from './config.js';
import { create } from './materializer.js';

// The materializer as its own process: config from the environment, a host with /healthz /readyz
// /metrics, and a graceful stop on SIGTERM (intake stops, the current batch is applied and committed,
// connections close).
const config = parseConfig(materializerConfigSchema);
const logger = createLogger('materializer', config.LOG_LEVEL);
await runMain({
  name: 'materializer',
  port: config.HTTP_PORT,
  host: config.HTTP_HOST,
  logger,
  graceMs: config.SHUTDOWN_GRACE_MS,
  create: (host) => create(config, { logger, metrics: host.metrics }),
});
