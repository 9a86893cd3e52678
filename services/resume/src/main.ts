import { runMain } from '@tidemark/service';
import { resumeConfigSchema } from './config.js';
import { create } from './service.js';

// The resume service as its own process: config from the environment, a host with /healthz /readyz
// /metrics and the resume API, and a graceful stop on SIGTERM.
await runMain('resume', resumeConfigSchema, (config, host) => create(config, { host }));
