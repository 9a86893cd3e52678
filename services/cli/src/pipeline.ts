import * as compactor from '@tidemark/compactor';
import { Bus, provisionTopics, topicNames } from '@tidemark/contract';
import { Kafka, logLevel } from 'kafkajs';
import * as materializer from '@tidemark/materializer';
import * as resume from '@tidemark/resume';
import {
  commonConfig,
  createLogger,
  createServiceHost,
  dependencyCheck,
  logRedisOutages,
  mountService,
  parseConfig,
  z,
  type Logger,
  type Service,
  type ServiceHost,
} from '@tidemark/service';
import * as validator from '@tidemark/validator';
import { connectRedis, unlinkMatching } from '@tidemark/state';

// The whole pipeline in one process, for local use and the end-to-end tests: the four services share
// one host (one HTTP port with /healthz, /readyz, /metrics and the resume API) and one metrics registry.
// Each reads its own configuration from the same environment, exactly as it would running alone.

export type Env = Readonly<Record<string, string | undefined>>;

export interface PipelineOptions {
  readonly env: Env;
  readonly logger: Logger;
  /** The shared HTTP port (0 picks a free one). */
  readonly port: number;
  readonly host?: string;
}

export interface Pipeline {
  readonly host: ServiceHost;
  readonly url: string;
  readonly bus: Bus;
  readonly resume: resume.ResumeService;
  stop(): Promise<void>;
}

/** Creates the topics and registry subjects if they are missing. Idempotent. */
export async function provision(env: Env, logger: Logger): Promise<Bus> {
  const config = parseConfig(z.object(commonConfig), env);
  const bus = await Bus.connect({
    brokers: config.KAFKA_BROKERS,
    registryUrl: config.SCHEMA_REGISTRY_URL,
    clientId: 'tidemark-cli',
    topics: topicNames(config.TOPIC_PREFIX),
    service: 'cli',
    logger,
  });
  await provisionTopics(await bus.admin(), bus.topics);
  return bus;
}

export async function startPipeline(options: PipelineOptions): Promise<Pipeline> {
  const logger = options.logger;
  const env = options.env;
  const common = parseConfig(z.object(commonConfig), env);
  const bus = await provision(env, logger);
  const host = createServiceHost({
    name: 'tidemark',
    port: options.port,
    ...(options.host === undefined ? {} : { host: options.host }),
    logger,
  });
  host.onShutdown(() => bus.disconnect());
  // The pipeline's own Bus (provisioning, and `pipeline.bus` for its callers); each service pings its own.
  host.addReadiness(
    'kafka',
    dependencyCheck(() => bus.ping(), common.DEPENDENCY_TIMEOUT_MS),
  );
  const child = (name: string) => logger.child({ service: name });
  const deps = (name: string) => ({ logger: child(name), metrics: host.metrics });
  try {
    // Downstream first, so each stage finds its consumers running when its input starts to flow.
    const resumeService = resume.create(parseConfig(resume.resumeConfigSchema, env), {
      host,
      logger: child('resume'),
    });
    const services: [string, Service][] = [
      ['resume', resumeService],
      ['validator', validator.create(parseConfig(validator.validatorConfigSchema, env), deps('validator'))],
      ['compactor', compactor.create(parseConfig(compactor.compactorConfigSchema, env), deps('compactor'))],
      [
        'materializer',
        materializer.create(parseConfig(materializer.materializerConfigSchema, env), deps('materializer')),
      ],
    ];
    for (const [name, service] of services) await mountService(host, name, service);
    const { url } = await host.listen();
    return { host, url, bus, resume: resumeService, stop: () => host.close() };
  } catch (error) {
    await host.close();
    throw error;
  }
}

/** Resolves once every service reports ready, or rejects after the timeout naming the ones that are not. */
export async function waitUntilReady(host: ServiceHost, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = await host.readiness();
    if (state.ready) return;
    if (Date.now() > deadline) {
      const waiting = [
        ...Object.entries(state.states)
          .filter(([, now]) => now !== 'ready')
          .map(([name, now]) => `${name} (${now})`),
        ...Object.entries(state.checks)
          .filter(([, ok]) => !ok)
          .map(([name]) => name),
      ];
      throw new Error(`not ready after ${timeoutMs} ms: ${waiting.join(', ')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Removes a deployment's topics and Redis keys (by its TOPIC_PREFIX and REDIS_PREFIX): for runs that are
 * their own deployment (the fallback report, tests, benchmarks) and must leave nothing behind. Best
 * effort: a topic or key already gone is not an error.
 */
export async function dropDeployment(env: Env, logger?: Logger): Promise<void> {
  const config = parseConfig(z.object(commonConfig), env);
  const admin = new Kafka({
    clientId: 'tidemark-cleanup',
    brokers: config.KAFKA_BROKERS,
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  try {
    const topics = Object.values(topicNames(config.TOPIC_PREFIX));
    await admin.deleteTopics({ topics, timeout: 10_000 }).catch(() => undefined);
  } finally {
    await admin.disconnect();
  }
  const redis = logRedisOutages(
    connectRedis(config),
    logger ?? createLogger('tidemark-cleanup', config.LOG_LEVEL),
    'cleanup',
  );
  try {
    await unlinkMatching(redis, `${config.REDIS_PREFIX}*`);
  } finally {
    redis.disconnect();
  }
}
