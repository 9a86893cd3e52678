// The resume service as a process: parse config, host, start, run until signalled.
import { createLogger, parseConfig, runMain } from '@tidemark/service';
import { resumeConfigSchema } from './config.js';
import { create } from './service.js';

const config = parseConfig(resumeConfigSchema);
const logger = createLogger('resume', config.LOG_LEVEL);
await runMain({
  name: 'resume',
  port: config.HTTP_PORT,
  host: config.HTTP_HOST,
  logger,
  graceMs: config.SHUTDOWN_GRACE_MS,
  create: (host) => create(config, { host }),
});
