import { createLogger, parseConfig, runMain } from '@tidemark/service';
import { validatorConfigSchema } from './config.js';
import { create } from './validator.js';

// The validator as its own process: config from the environment, a host with /healthz /readyz
// /metrics, and a graceful stop on SIGTERM (intake stops, the current batch commits, connections close).
const config = parseConfig(validatorConfigSchema);
const logger = createLogger('validator', config.LOG_LEVEL);
await runMain({
  name: 'validator',
  port: config.HTTP_PORT,
  host: config.HTTP_HOST,
  logger,
  graceMs: config.SHUTDOWN_GRACE_MS,
  create: (host) => create(config, { logger, metrics: host.metrics }),
});
