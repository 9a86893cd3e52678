import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { dropDeployment, startPipeline, waitUntilReady, type Env } from '../services/cli/src/index.js';
import { Bus, createPublisher, provisionTopics, topicNames } from '../libs/contract/src/index.js';
import { definePolicy, type TurnEvent } from '../libs/core/src/index.js';
import { createLogger } from '../libs/service/src/index.js';
import { freePort } from '../test/infra/ports.js';
import { microsPerTurn, sampleCpu, type Watched } from './cpu.js';
import type { ObserveReport, ObserveRequest } from './observe.js';
import type { LegResult } from './report.js';
import { ended, said, type ProcessMode } from './children.js';
import { commandCounts, commandsPerTurn, describeCommands } from './redis-commands.js';
import { epoch } from './stages.js';
import { validatorPhaseLines } from './validator-phases.js';
import { offer } from './workload.js';

export interface TidemarkLegOptions {
  readonly config: { KAFKA_BROKERS: string[]; SCHEMA_REGISTRY_URL: string; REDIS_URL: string };
  /** The workload's turns, interleaved, and what it was generated from (the observers regenerate it). */
  readonly turns: readonly TurnEvent[];
  readonly workload: Pick<ObserveRequest, 'tenantId' | 'sessions' | 'turns' | 'seed' | 'maxRepairs'>;
  readonly partitions: number;
  /** With processes: how many processes of each service (the same group: they share the partitions). */
  readonly instances: number;
  readonly rate: number;
  readonly mode: ProcessMode;
  readonly timeline: boolean;
  /** With processes: each service writes its V8 CPU profile under `<profileDir>/<service>/` as it stops. */
  readonly profileDir?: string | null;
  /** Topic and Redis key prefixes of this leg alone (dropped afterwards). */
  readonly topicPrefix: string;
  readonly redisPrefix: string;
  /** The bench process and the stack's processes; the services and the observers are added to them. */
  readonly watched: readonly Watched[];
}

const root = fileURLToPath(new URL('..', import.meta.url));
const seconds = (ms: number) => (ms / 1000).toFixed(2);

/**
 * One Tidemark leg: the four services (in this process, or one process each), the observers in a process
 * of their own, the turns through `createPublisher` in calls of 500. Turns/s and CPU run from the first
 * publish until the journal holds every compaction and decision of the core reference; the observers'
 * CPU is reported apart and not summed.
 */
export async function tidemarkLeg(
  options: TidemarkLegOptions,
): Promise<LegResult & { lines: string[]; latency: ObserveReport['latency'] }> {
  const { config, workload } = options;
  const env: Env = {
    KAFKA_BROKERS: config.KAFKA_BROKERS.join(','),
    SCHEMA_REGISTRY_URL: config.SCHEMA_REGISTRY_URL,
    REDIS_URL: config.REDIS_URL,
    TOPIC_PREFIX: options.topicPrefix,
    REDIS_PREFIX: options.redisPrefix,
    LOG_LEVEL: 'error',
    PARTITIONS: String(options.partitions),
    MAX_REPAIRS: String(workload.maxRepairs),
    POLICY_OVERRIDES: JSON.stringify({ [workload.tenantId]: definePolicy({}) }),
  };
  // Errors only: the services' start-up warnings (rebuilding an absent store, …) are expected on fresh keys.
  const logger = createLogger('bench', 'error');
  const bus = await Bus.connect({
    brokers: config.KAFKA_BROKERS,
    registryUrl: config.SCHEMA_REGISTRY_URL,
    clientId: `${options.topicPrefix}bench`,
    topics: topicNames(options.topicPrefix),
    service: 'bench',
    logger,
  });
  const stops: (() => Promise<void>)[] = [];
  const began = Date.now();
  // Each step on stderr with the seconds since the leg began: a leg that hangs (a smoke killed when its
  // time ran out) then says where it stopped, not only that it did.
  const step = (text: string) =>
    process.stderr.write(`  tidemark leg, ${((Date.now() - began) / 1000).toFixed(1)} s: ${text}\n`);
  try {
    step(`starting the services (${options.mode === 'processes' ? 'one process each' : 'in this process'})`);
    const services =
      options.mode === 'processes'
        ? await serviceProcesses(env, bus, options, options.profileDir ?? null)
        : await oneProcess(env);
    stops.push(() => services.stop());
    step('services ready; starting the observers');
    const observer = spawn(process.execPath, ['--import', 'tsx', 'bench/observe.ts'], {
      cwd: root,
      env: {
        ...process.env,
        BENCH_OBSERVE: JSON.stringify({
          ...workload,
          brokers: config.KAFKA_BROKERS,
          registryUrl: config.SCHEMA_REGISTRY_URL,
          topicPrefix: options.topicPrefix,
          timeline: options.timeline,
        } satisfies ObserveRequest),
      },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    stops.push(() => ended(observer));
    const settled = said<{ at: number; pending: number }>(observer, 'settled', 900_000);
    const reported = said<{ report: ObserveReport }>(observer, 'report', 960_000);
    settled.catch(() => undefined);
    reported.catch(() => undefined);
    await said(observer, 'ready', 120_000);
    step('observers ready; publishing');
    const publisher = await createPublisher({
      brokers: config.KAFKA_BROKERS,
      registryUrl: config.SCHEMA_REGISTRY_URL,
      clientId: `${options.topicPrefix}publisher`,
      topicPrefix: options.topicPrefix,
      logger,
    });

    const watched = [...options.watched, ...services.watched, { name: 'observers', pid: observer.pid! }];
    const total = options.turns.length;
    const commandsBefore = await commandCounts(config.REDIS_URL);
    const before = sampleCpu(watched);
    const first = epoch();
    observer.send({ type: 'start', at: first });
    await offer(total, (from, to) => publisher.publishTurns(options.turns.slice(from, to)), {
      rate: options.rate,
    });
    const published = epoch();
    await publisher.close();
    step(`published ${total} turns; waiting for every compaction and decision of the reference`);
    const waiting = setInterval(() => step('still waiting for the pipeline to settle'), 15_000);
    const { at: last, pending } = await settled.finally(() => clearInterval(waiting));
    step('settled');
    const after = sampleCpu(watched);
    const commands = commandsPerTurn(commandsBefore, await commandCounts(config.REDIS_URL), total);
    if (pending > 0) throw new Error(`${pending} sessions did not settle within 10 minutes`);
    const { report } = await reported;
    const phases = validatorPhaseLines(await services.validatorMetrics());
    const turnsPerSecond = (total / (last - first)) * 1000;
    return {
      turnsPerSecond,
      cpu: microsPerTurn(before, after, total),
      excluded: new Set(['observers']),
      redisCommands: commands.total,
      latency: report.latency,
      lines: [
        `whole pipeline: ${turnsPerSecond.toFixed(0)} turns/s (${total} turns settled in ${seconds(last - first)} s; published in ${seconds(published - first)} s)`,
        describeCommands(commands),
        ...report.lines,
        ...phases,
      ],
    };
  } finally {
    step('stopping');
    for (const stop of stops.reverse()) await stop();
    await bus.disconnect();
    await dropDeployment(env).catch(() => undefined);
  }
}

interface Services {
  readonly watched: readonly Watched[];
  /** The Prometheus text of every validator (for where the validation latency goes). */
  validatorMetrics(): Promise<string[]>;
  stop(): Promise<void>;
}

/** The four services in this process (the all-in-one `tidemark start`). */
async function oneProcess(env: Env): Promise<Services> {
  const pipeline = await startPipeline({ env, logger: createLogger('bench', 'error'), port: 0 });
  await waitUntilReady(pipeline.host);
  return {
    watched: [],
    validatorMetrics: async () => [await pipeline.host.metrics.metrics()],
    stop: () => pipeline.stop(),
  };
}

/**
 * Each service in its own process (`instances` of each), as in production, so the machine's cores are all
 * used: `node --import tsx services/<name>/src/main.ts`, ready when its /readyz answers 200.
 */
async function serviceProcesses(
  env: Env,
  bus: Bus,
  { partitions, instances }: Pick<TidemarkLegOptions, 'partitions' | 'instances'>,
  profileDir: string | null,
): Promise<Services> {
  await provisionTopics(await bus.admin(), bus.topics, { partitions });
  const names = ['materializer', 'compactor', 'validator', 'resume'];
  // Ports the OS has free now: a process left over from an earlier step cannot hold this one's port.
  // One at a time: the OS could hand the same free port to two concurrent calls.
  const ports: number[] = [];
  for (let i = 0; i < instances * names.length; i++) ports.push(await freePort());
  const children = Array.from({ length: instances }, (_, instance) =>
    names.map((service, index) => {
      const name = instances === 1 ? service : `${service}-${instance + 1}`;
      const port = ports[instance * names.length + index]!;
      const profile =
        profileDir === null ? [] : ['--cpu-prof', '--cpu-prof-dir', path.join(profileDir, service)];
      const child = spawn(process.execPath, [...profile, '--import', 'tsx', 'src/main.ts'], {
        cwd: fileURLToPath(new URL(`../services/${service}/`, import.meta.url)),
        env: { ...process.env, ...env, HTTP_PORT: String(port) },
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      return { name, child, url: `http://127.0.0.1:${port}/readyz` };
    }),
  ).flat();
  const stop = async () => void (await Promise.all(children.map(({ child }) => ended(child))));
  // Each process compiles its TypeScript as it starts: on two cores, sixteen of them take minutes.
  const waitMs = 60_000 + 15_000 * children.length;
  const deadline = Date.now() + waitMs;
  for (const { name, child, url } of children) {
    for (;;) {
      const answer = await fetch(url).then(
        async (response) => ({ ready: response.status === 200, body: await response.text() }),
        (error: unknown) => ({ ready: false, body: String(error) }),
      );
      if (answer.ready) break;
      if (child.exitCode !== null || Date.now() > deadline) {
        // Said before the stop below, which ends every process (and so sets every exit code).
        const why =
          child.exitCode !== null
            ? `${name} exited (${child.exitCode}) before it was ready`
            : `${name} not ready after ${waitMs / 1000} s; its /readyz: ${answer.body.slice(0, 2_000)}`;
        await stop();
        throw new Error(why);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  const validatorMetrics = () =>
    Promise.all(
      children
        .filter(({ name }) => name.startsWith('validator'))
        .map(({ url }) =>
          fetch(url.replace(/\/readyz$/, '/metrics')).then(
            (response) => response.text(),
            () => '',
          ),
        ),
    );
  return {
    watched: children.map(({ name, child }) => ({ name, pid: child.pid! })),
    validatorMetrics,
    stop,
  };
}
