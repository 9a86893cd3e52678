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
export {
  createServiceHost,
  type Readiness,
  type ReadinessCheck,
  type ServiceHost,
  type ServiceHostOptions,
} from './host.js';
export { runUntilSignalled } from './shutdown.js';
export { z } from 'zod';
export { Counter, Gauge, Histogram, Registry } from 'prom-client';
export { mountService, runMain, type MainOptions, type Service } from './service.js';
export { stateOf, type ServicePhase, type ServiceState } from './state.js';
export { superviseRebuild, type RebuildOptions, type RebuildSupervisor } from './rebuild.js';
export { connectionChecks, dependencyCheck, type Pingable } from './dependencies.js';
export { isRedisOutageError, logRedisOutages, type RedisConnectionEvents } from './redis.js';
