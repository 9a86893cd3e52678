import { randomUUID } from 'node:crypto';
import { Bus, provisionTopics, topicNames } from '@tidemark/contract';
import {
  createLogger,
  connectionChecks,
  Gauge,
  logRedisOutages,
  type Logger,
  Registry,
  type ServiceComponent,
  type ServiceHost,
} from '@tidemark/service';
import { PlanStore } from '@tidemark/state';
import { Redis } from 'ioredis';
import { parseTokenList, readTokenFile, TokenVerifier, type TokenEntry } from './auth.js';
import { ResumeUnavailableError } from './client.js';
import { createResumeClient, type ResumeLibraryClient } from './library.js';
import { policiesOf, type ResumeConfig } from './config.js';
import { registerResumeRoutes } from './http.js';
import { resumeMetrics } from './metrics.js';
import { ResumeWorker } from './worker.js';

// The resume service: the worker (markers → plans, compactions → nodes) and the HTTP API over the
// library client, in one component. createResume registers its routes on the host it is given (the
// all-in-one process shares one); it never touches process signals.

export interface ResumeDeps {
  /** The host to register the HTTP routes on (and whose metrics registry and logger to use). */
  readonly host?: ServiceHost;
  readonly logger?: Logger;
  readonly metrics?: Registry;
  /** Tokens, overriding RESUME_TOKENS / RESUME_TOKENS_FILE (tests). */
  readonly tokens?: readonly TokenEntry[];
}

export interface ResumeService extends ServiceComponent {
  /** The in-process library the HTTP handler uses (available after start). */
  readonly client: ResumeLibraryClient;
  readonly worker: ResumeWorker | null;
}

export function tokensFromConfig(config: ResumeConfig): TokenEntry[] {
  return [
    ...(config.RESUME_TOKENS === undefined ? [] : parseTokenList(config.RESUME_TOKENS)),
    ...(config.RESUME_TOKENS_FILE === undefined ? [] : readTokenFile(config.RESUME_TOKENS_FILE)),
  ];
}

const rebuildLockMs = 60_000;
const groupIdNotFound = 69;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function createResume(config: ResumeConfig, deps: ResumeDeps = {}): ResumeService {
  const logger = deps.logger ?? deps.host?.logger ?? createLogger('resume', config.LOG_LEVEL);
  const registry = deps.metrics ?? deps.host?.metrics ?? new Registry();
  const metrics = resumeMetrics(registry);
  // The worker's lag on markers and compactions, asked of the broker at scrape time.
  if (registry.getSingleMetric('tidemark_resume_consumer_lag') === undefined) {
    new Gauge({
      name: 'tidemark_resume_consumer_lag',
      help: 'Records of the markers and compactions topics the resume worker has not applied yet.',
      registers: [registry],
      async collect() {
        this.set((await worker?.lag().catch(() => null)) ?? 0);
      },
    });
  }
  const tokens = new TokenVerifier(deps.tokens ?? tokensFromConfig(config));
  // The compactor's policies (a bad override fails here, at start): when a session's L1 is due.
  const { policyFor } = policiesOf(config);
  if (tokens.size === 0) logger.warn('no resume tokens configured: every API request will get 401');

  let bus: Bus | null = null;
  let redis: Redis | null = null;
  let client: ResumeLibraryClient | null = null;
  let worker: ResumeWorker | null = null;
  let plans: PlanStore | null = null;
  let watcher: NodeJS.Timeout | null = null;
  let rebuilding: Promise<void> | null = null;
  let stopped = false;

  // Routes go on before listen(); they answer 503 until start() has connected.
  const started = <T>(use: (started: ResumeLibraryClient) => Promise<T>): Promise<T> => {
    if (client === null) {
      const cause = new Error('resume service not started');
      return Promise.reject(new ResumeUnavailableError(cause.message, { cause }));
    }
    return use(client);
  };
  if (deps.host !== undefined) {
    registerResumeRoutes(deps.host.http, {
      tokens,
      logger,
      client: {
        resume: (tenantId, sessionId) => started((c) => c.resume(tenantId, sessionId)),
        status: (tenantId, sessionId) => started((c) => c.status(tenantId, sessionId)),
      },
    });
  }

  // The plans are derived from the markers and compactions topics. When the store is absent (first
  // start, or Redis lost its data), every worker leaves its groups; one of them (the rebuild lock's
  // holder) deletes the groups, so that they consume both topics from the beginning again, clears the
  // store and publishes a new epoch; the others wait for the epoch and join the fresh groups.
  const rebuildIfLost = async (): Promise<void> => {
    // Only workers rebuild: an API-only instance answers `rebuilding` until one has.
    if (plans === null || bus === null || !config.RESUME_WORKER) return;
    if ((await plans.epoch()) !== null) {
      // Another instance rebuilt the store already: this worker only has to start over on it.
      if (worker?.lost === true) {
        await worker.stop();
        worker = null;
        await startWorker();
      }
      return;
    }
    logger.warn('resume store absent: rebuilding plans from the markers and compactions topics');
    if (worker !== null) await worker.stop();
    worker = null;
    const owner = randomUUID();
    if (await plans.lockRebuild(owner, rebuildLockMs)) {
      try {
        // Never an epoch over groups that still hold their offsets: the new store would miss every
        // decision before them. The watcher tries again once the other members have left.
        if (!(await deleteGroups(bus))) return;
        await plans.clear();
        const epoch = await plans.establishEpoch(randomUUID());
        logger.info({ epoch }, 'resume store epoch established');
      } finally {
        await plans.unlockRebuild(owner);
      }
    } else {
      const deadline = Date.now() + rebuildLockMs;
      while ((await plans.epoch()) === null && Date.now() < deadline && !stopped) await sleep(100);
    }
    // No epoch yet (the holder died): the watcher tries again.
    if ((await plans.epoch()) !== null) await startWorker();
  };

  // Deletes the worker's groups, waiting (bounded) for other instances to leave them; false if it could not.
  const deleteGroups = async (bus: Bus): Promise<boolean> => {
    const admin = await bus.admin();
    const deadline = Date.now() + rebuildLockMs / 2;
    for (;;) {
      const failed = await admin
        .deleteGroups([config.RESUME_GROUP_ID, `${config.RESUME_GROUP_ID}-nodes`])
        .then(() => [])
        .catch((error: unknown) =>
          ((error as { groups?: { errorCode?: number }[] }).groups ?? [{}]).filter(
            // A group that never existed (GROUP_ID_NOT_FOUND) needs no deleting.
            (group) => group.errorCode !== groupIdNotFound,
          ),
        );
      if (failed.length === 0) return true;
      if (Date.now() > deadline) {
        logger.warn({ failed }, 'resume groups still have members: the rebuild will be tried again');
        return false;
      }
      await sleep(250);
    }
  };

  const startWorker = async (): Promise<void> => {
    if (!config.RESUME_WORKER || bus === null || plans === null || stopped) return;
    worker = new ResumeWorker({
      bus,
      plans,
      groupId: config.RESUME_GROUP_ID,
      logger,
      metrics,
      cacheSessions: config.RESUME_CACHE_SESSIONS,
      sessionTimeoutMs: config.CONSUMER_SESSION_TIMEOUT_MS,
    });
    await worker.start();
  };

  // Starts once; a stop() during the start waits for it, then tears down what it connected.
  let starting: Promise<void> | null = null;
  const startOnce = async (): Promise<void> => {
    stopped = false;
    const topics = topicNames(config.TOPIC_PREFIX);
    bus = await Bus.connect({
      brokers: config.KAFKA_BROKERS,
      registryUrl: config.SCHEMA_REGISTRY_URL,
      clientId: `tidemark-resume-${randomUUID().slice(0, 8)}`,
      topics,
      service: 'resume',
      logger,
    });
    if (config.PROVISION_TOPICS) {
      await provisionTopics(await bus.admin(), topics, { partitions: config.TOPIC_PARTITIONS });
    }
    // ioredis reconnects by itself; an outage is told once, not as an error per reconnect.
    redis = logRedisOutages(
      new Redis(config.REDIS_URL, { maxRetriesPerRequest: 2, enableOfflineQueue: true }),
      logger,
      'resume',
    );
    plans = new PlanStore(redis, { prefix: config.REDIS_PREFIX });
    client = createResumeClient({
      redis,
      bus,
      redisPrefix: config.REDIS_PREFIX,
      metrics: registry,
      logger,
      divergenceChecks: config.RESUME_DIVERGENCE_CHECKS,
      fetchBytes: config.RESUME_FETCH_BYTES,
      contextCacheBytes: config.RESUME_CONTEXT_CACHE_BYTES,
      policyFor,
      staleAfterMs: config.STALE_AFTER_MS,
    });
    await rebuildIfLost();
    if (worker === null) await startWorker();
    // A lost store (Redis flushed or restarted empty) is noticed here, by its epoch (one GET a second),
    // or by the worker (a refused write), and rebuilt off the batch's path. API-only instances leave
    // the rebuild to the workers and answer `rebuilding` meanwhile.
    watcher = setInterval(() => {
      if (rebuilding !== null || stopped || !config.RESUME_WORKER) return;
      rebuilding = (async () => {
        if (worker?.lost === true || (await plans?.epoch()) === null) await rebuildIfLost();
      })()
        .catch((error: unknown) =>
          // Redis not answering yet, most often: the check runs again in RESUME_EPOCH_CHECK_MS.
          logger.warn(
            { err: error, retryInMs: config.RESUME_EPOCH_CHECK_MS },
            'resume store rebuild failed; retrying',
          ),
        )
        .finally(() => {
          rebuilding = null;
        });
    }, config.RESUME_EPOCH_CHECK_MS);
    watcher.unref();
  };

  return {
    // Nothing answers a frozen Redis or broker: the pings have a deadline.
    dependencies: connectionChecks({ redis: () => redis, kafka: () => bus }, config.DEPENDENCY_TIMEOUT_MS),
    get client(): ResumeLibraryClient {
      if (client === null) throw new Error('resume service not started');
      return client;
    },
    get worker() {
      return worker;
    },
    start() {
      starting ??= startOnce();
      return starting;
    },
    ready() {
      if (client === null || stopped) return false;
      return config.RESUME_WORKER ? worker?.ready() === true : true;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await starting?.catch(() => undefined);
      if (watcher !== null) clearInterval(watcher);
      await rebuilding;
      await worker?.stop();
      await client?.close();
      await bus?.disconnect();
      redis?.disconnect();
      worker = null;
    },
  };
}
