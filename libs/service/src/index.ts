// @tidemark/service: the shell every Tidemark service runs in. Services hold no process plumbing of
// their own; they get config, logs, metrics, health/readiness and shutdown from here.
export {
  commonConfig,
  ConfigError,
  defaultStateRetentionMs,
  groupNamed,
  parseConfig,
  parsedVariable,
  stateRetentionConfig,
} from './config.js';
export { limitHeapGrowth } from './heap.js';
export { createLogger, type Logger } from './logger.js';
export {
  createServiceHost,
  httpServer,
  maxParamLength,
  type ReadinessCheck,
  type ServiceHost,
} from './host.js';
export { z } from 'zod';
export { Counter, Gauge, Histogram, Registry } from 'prom-client';
export { hostedBy, mountService, runMain, type HostedDeps, type Service } from './service.js';
export { stateOf, type ServicePhase, type ServiceState } from './state.js';
export { superviseRebuild, type RebuildSupervisor } from './rebuild.js';
export { connectionChecks, dependencyCheck } from './dependencies.js';
export { isRedisOutageError, logRedisOutages } from './redis.js';
