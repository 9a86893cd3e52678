import { createLogger, parseConfig, runMain } from '@tidemark/service';
import { create } from './compactor.js';
import { compactorConfigSchema } from './config.js';

const config = parseConfig(compactorConfigSchema);
const logger = createLogger('compactor', config.LOG_LEVEL);
await runMain({
  name: 'compactor',
  port: config.HTTP_PORT,
  host: config.HTTP_HOST,
  logger,
  graceMs: config.SHUTDOWN_GRACE_MS,
  create: (host) => create(config, { logger: host.logger, metrics: host.metrics }),
});
