// @tidemark/service: the shell every Tidemark service runs in. Services hold no process plumbing of
// their own; they get config, logs, metrics, health/readiness and shutdown from here.
export {
  commonConfig,
  ConfigError,
  groupNamed,
  parseConfig,
  parsedVariable,
  type CommonConfig,
} from './config.js';
export { createLogger, type Logger } from './logger.js';
export { createServiceHost, type ReadinessCheck, type ServiceHost, type ServiceHostOptions } from './host.js';
export { runUntilSignalled } from './shutdown.js';
export { z } from 'zod';
export { Counter, Gauge, Histogram, Registry } from 'prom-client';
export { mountComponent, runMain, type MainOptions, type ServiceComponent } from './component.js';
export { connectionChecks, dependencyCheck, type Pingable } from './dependencies.js';
export { isRedisOutageError, logRedisOutages, type RedisConnectionEvents } from './redis.js';
