import { randomUUID } from 'node:crypto';
import { Bus, provisionTopics, SessionHistory, topicNames, type EventProducer } from '@tidemark/contract';
import {
  connectionChecks,
  hostedBy,
  logRedisOutages,
  stateOf,
  superviseRebuild,
  type HostedDeps,
  type Service,
  type ServiceHost,
  type ServicePhase,
} from '@tidemark/service';
import { membershipOption, PlanStore, connectRedis, type RedisClient } from '@tidemark/state';
import { operatorTokensFromConfig, TokenVerifier, tokensFromConfig, type TokenEntry } from './auth.js';
import { ResumeUnavailableError } from './outcomes.js';
import { policiesOf, type ResumeConfig } from './config.js';
import { registerResumeRoutes } from './http.js';
import { createResumeClient, type ResumeLibraryClient } from './library.js';
import { resumeMetrics } from './metrics.js';
import { ExpiredPlans } from './expired.js';
import { registerSessionPage } from './session-page.js';
import { createRevoker, type Revoker } from './revoke.js';
import { rebuildPlanStore } from './store-rebuild.js';
import { ResumeWorker } from './worker.js';

// The resume service: the worker (markers → plans, compactions → nodes) and the HTTP API over the
// library client, in one service. It registers its routes on the host it is given (the all-in-one
// process shares one); it never touches process signals.

export interface ResumeDeps extends HostedDeps {
  /** The host to register the HTTP routes on (and whose metrics registry and logger to use). */
  readonly host?: ServiceHost;
  /** Tokens, overriding RESUME_TOKENS / RESUME_TOKENS_FILE (tests). */
  readonly tokens?: readonly TokenEntry[];
  /** Operators' tokens, overriding OPERATOR_TOKENS / OPERATOR_TOKENS_FILE (tests). */
  readonly operatorTokens?: readonly TokenEntry[];
}

export interface ResumeService extends Service {
  /** The in-process library the HTTP handler uses (available after run). */
  readonly client: ResumeLibraryClient;
  readonly worker: ResumeWorker | null;
}

/** How long one worker may hold the rebuild lock without renewing it. */
const rebuildLockMs = 60_000;

export function create(config: ResumeConfig, deps: ResumeDeps = {}): ResumeService {
  const { logger, metrics: registry } = hostedBy('resume', config.LOG_LEVEL, {
    logger: deps.logger ?? deps.host?.logger,
    metrics: deps.metrics ?? deps.host?.metrics,
  });
  const metrics = resumeMetrics(registry);
  const tokens = new TokenVerifier(deps.tokens ?? tokensFromConfig(config));
  // The compactor's policies (a bad override fails here, at start): when a session's L1 is due.
  const { policyFor } = policiesOf(config);
  if (tokens.size === 0) logger.warn('no resume tokens configured: every API request will get 401');

  let bus: Bus | null = null;
  let redis: RedisClient | null = null;
  let client: ResumeLibraryClient | null = null;
  let worker: ResumeWorker | null = null;
  let plans: PlanStore | null = null;
  let history: SessionHistory | null = null;
  let revoker: Revoker | null = null;
  let producer: Promise<EventProducer> | null = null;
  let watcher: NodeJS.Timeout | null = null;
  let phase: ServicePhase = 'idle';
  const stopped = (): boolean => phase === 'draining' || phase === 'stopped';
  const workerLag = () => worker?.lag() ?? Promise.resolve(null);
  metrics.lagSources.add(workerLag);

  // Routes go on before listen(); they answer 503 until run() has connected.
  let sessionPage: { close(): Promise<void> } | null = null;
  if (deps.host !== undefined) {
    const started = <T>(use: (started: ResumeLibraryClient) => Promise<T>): Promise<T> => {
      if (client !== null) return use(client);
      const cause = new Error('resume service not started');
      return Promise.reject(new ResumeUnavailableError(cause.message, { cause }));
    };
    registerResumeRoutes(deps.host.http, {
      tokens,
      logger,
      client: {
        resume: (tenantId, sessionId) => started((c) => c.resume(tenantId, sessionId)),
        status: (tenantId, sessionId) => started((c) => c.status(tenantId, sessionId)),
      },
      expand: {
        node: (ref, nodeId) => started((c) => c.expand.node(ref, nodeId)),
        turns: (ref, nodeId, range, format) => started((c) => c.expand.turns(ref, nodeId, range, format)),
      },
      revoke: {
        operators: new TokenVerifier(deps.operatorTokens ?? operatorTokensFromConfig(config)),
        revoker: {
          revoke: (ref, markerId, request) => started(() => revoker!.revoke(ref, markerId, request)),
        },
      },
    });
    sessionPage = registerSessionPage(deps.host.http, {
      tokens,
      logger,
      redisPrefix: config.REDIS_PREFIX,
      sources: () => (bus === null || redis === null || client === null ? null : { bus, redis, client }),
    });
  }

  const startWorker = async (): Promise<void> => {
    if (bus === null || plans === null || stopped()) return;
    history ??= new SessionHistory(bus);
    const expired = new ExpiredPlans(plans, history);
    worker = new ResumeWorker({
      restoreExpired: (epoch, ref) => expired.restore(epoch, ref),
      stateRetentionMs: config.STATE_RETENTION_MS,
      bus,
      plans,
      groupId: config.RESUME_GROUP_ID,
      logger,
      metrics,
      cacheSessions: config.RESUME_CACHE_SESSIONS,
      sessionTimeoutMs: config.CONSUMER_SESSION_TIMEOUT_MS,
      membershipOf: (groupId) =>
        redis === null
          ? {}
          : membershipOption(redis, {
              prefix: config.REDIS_PREFIX,
              groupId,
              service: 'resume',
              instanceId: config.INSTANCE_ID,
            }),
    });
    await worker.start();
  };

  // The worker starts over on a store that was lost (rebuilt by this instance or another one): it
  // leaves its groups first, since a group with members cannot be deleted.
  const rebuilds = superviseRebuild({
    what: 'resume store',
    logger,
    attempt: async () => {
      await worker?.stop();
      worker = null;
      if ((await plans!.epoch()) === null) {
        await rebuildPlanStore({
          bus: bus!,
          plans: plans!,
          groupIds: [config.RESUME_GROUP_ID, `${config.RESUME_GROUP_ID}-nodes`],
          logger,
          lockMs: rebuildLockMs,
        });
      }
      await startWorker();
    },
  });

  // A lost store (Redis flushed or restarted empty) is noticed here, by its epoch (one GET a second), or
  // by the worker (a refused write), and rebuilt off the batch's path. Only workers rebuild: an API-only
  // instance answers `rebuilding` until one has.
  const watchForLoss = (): void => {
    if (rebuilds.running || stopped()) return;
    void (async () => {
      if (worker?.lost === true || (await plans?.epoch()) === null) await rebuilds.run('resume store lost');
    })().catch((error: unknown) =>
      // Redis not answering yet, most often: the check runs again in RESUME_EPOCH_CHECK_MS.
      logger.warn({ err: error, retryInMs: config.RESUME_EPOCH_CHECK_MS }, 'resume store check failed'),
    );
  };

  const connect = async (): Promise<void> => {
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
      connectRedis(config, { maxRetriesPerRequest: 2, enableOfflineQueue: true }),
      logger,
      'resume',
    );
    plans = new PlanStore(redis, { prefix: config.REDIS_PREFIX, retentionMs: config.STATE_RETENTION_MS });
    const connected = bus;
    const expiredPlans = new ExpiredPlans(plans, (history ??= new SessionHistory(bus)));
    revoker = createRevoker({
      sessionState: (ref) => expiredPlans.sessionState(ref),
      // One producer, made on the first revocation (most instances never revoke anything).
      publish: async (revocation) => {
        producer ??= connected.producer().catch((error: unknown) => {
          producer = null; // made again on the next revocation
          throw error;
        });
        try {
          await (await producer).send('revocations', [revocation]);
        } catch (error) {
          throw new ResumeUnavailableError('the revocation could not be published', { cause: error });
        }
      },
      waitMs: config.REVOKE_WAIT_MS,
    });
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
      stateRetentionMs: config.STATE_RETENTION_MS,
    });
  };

  // Runs once; a stop() during the run waits for it, then tears down what it connected.
  let running: Promise<void> | null = null;
  const runOnce = async (): Promise<void> => {
    phase = 'starting';
    await connect();
    if (config.RESUME_WORKER) {
      if ((await plans!.epoch()) === null) await rebuilds.run('resume store absent at start');
      else await startWorker();
      watcher = setInterval(watchForLoss, config.RESUME_EPOCH_CHECK_MS);
      watcher.unref();
    }
    if (!stopped()) phase = 'running';
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
    get state() {
      const intakeReady = config.RESUME_WORKER ? worker?.ready() === true : client !== null;
      return stateOf(phase, rebuilds.running, intakeReady);
    },
    run() {
      running ??= runOnce();
      return running;
    },
    async stop() {
      if (stopped()) return;
      phase = 'draining';
      await running?.catch(() => undefined);
      if (watcher !== null) clearInterval(watcher);
      await rebuilds.stop();
      await worker?.stop();
      await client?.close();
      await sessionPage?.close();
      await producer?.then((p) => p.disconnect()).catch(() => undefined);
      await history?.close();
      await bus?.disconnect();
      redis?.disconnect();
      worker = null;
      metrics.lagSources.delete(workerLag);
      phase = 'stopped';
    },
  };
}
