import { runMain } from '@tidemark/service';
import { create } from './compactor.js';
import { compactorConfigSchema } from './config.js';

// The compactor as its own process: config from the environment, a host with /healthz /readyz
// /metrics, and a graceful stop on SIGTERM (intake stops, the current batch commits, connections close).
await runMain('compactor', compactorConfigSchema, (config, host) =>
  create(config, { logger: host.logger, metrics: host.metrics }),
);
