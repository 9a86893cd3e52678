import { runMain } from '@tidemark/service';
import { materializerConfigSchema } from './config.js';
import { create } from './materializer.js';

// The materializer as its own process: config from the environment, a host with /healthz /readyz
// /metrics, and a graceful stop on SIGTERM (intake stops, the current batch is applied and committed,
// connections close).
await runMain('materializer', materializerConfigSchema, (config, host) =>
  create(config, { logger: host.logger, metrics: host.metrics }),
);
