import { runMain } from '@tidemark/service';
import { validatorConfigSchema } from './config.js';
import { create } from './validator.js';

// The validator as its own process: config from the environment, a host with /healthz /readyz
// /metrics, and a graceful stop on SIGTERM (intake stops, the current batch commits, connections close).
await runMain('validator', validatorConfigSchema, (config, host) =>
  create(config, { logger: host.logger, metrics: host.metrics }),
);
