import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** Where the real infrastructure of a test run lives. */
export interface Endpoints {
  kafkaBrokers: string[];
  schemaRegistryUrl: string;
  redisUrl: string;
  /** How they were obtained, for the run's log. */
  source: 'environment' | 'testcontainers' | 'local-stack';
}

const run = promisify(execFile);
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * One way for every integration test to get Kafka, the registry and Redis:
 * 1. endpoints given in the environment (KAFKA_BROKERS, SCHEMA_REGISTRY_URL, REDIS_URL), all three;
 * 2. else, when a Docker engine answers, containers started by testcontainers;
 * 3. else the local stack under infra/, started when it is down.
 * The returned `stop` undoes only what this call started.
 */
export async function acquireEndpoints(
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ endpoints: Endpoints; stop: () => Promise<void> }> {
  const fromEnv = endpointsFromEnv(env);
  if (fromEnv) return { endpoints: { ...fromEnv, source: 'environment' }, stop: async () => {} };
  if (await dockerAnswers(env)) {
    const { startContainers } = await import('./containers.js');
    return startContainers();
  }
  return { endpoints: await startLocalStack(), stop: async () => {} };
}

type Partial3 = Omit<Endpoints, 'source'>;

export function endpointsFromEnv(env: NodeJS.ProcessEnv): Partial3 | undefined {
  const { KAFKA_BROKERS, SCHEMA_REGISTRY_URL, REDIS_URL } = env;
  const given = [KAFKA_BROKERS, SCHEMA_REGISTRY_URL, REDIS_URL].filter(Boolean).length;
  if (given === 0) return undefined;
  if (!KAFKA_BROKERS || !SCHEMA_REGISTRY_URL || !REDIS_URL) {
    throw new Error(
      'Set all three of KAFKA_BROKERS, SCHEMA_REGISTRY_URL and REDIS_URL, or none of them (then the local stack is used).',
    );
  }
  return {
    kafkaBrokers: KAFKA_BROKERS.split(',').map((b) => b.trim()),
    schemaRegistryUrl: SCHEMA_REGISTRY_URL,
    redisUrl: REDIS_URL,
  };
}

async function dockerAnswers(env: NodeJS.ProcessEnv): Promise<boolean> {
  if (env.TIDEMARK_NO_DOCKER === '1') return false;
  if (!env.DOCKER_HOST && !existsSync('/var/run/docker.sock')) return false;
  try {
    await run('docker', ['info', '--format', '{{.ServerVersion}}'], { timeout: 5_000 });
    return true;
  } catch {
    return false;
  }
}

async function startLocalStack(): Promise<Partial3 & { source: 'local-stack' }> {
  try {
    await run('bash', [path.join(repoRoot, 'infra/stack.sh'), 'up'], {
      cwd: repoRoot,
      timeout: 600_000,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string };
    throw new Error(
      `The local stack did not come up (bash infra/stack.sh up):\n${e.stdout ?? ''}${e.stderr ?? ''}`,
      {
        cause: error,
      },
    );
  }
  const text = await readFile(path.join(repoRoot, '.local/stack.env'), 'utf8');
  const vars = Object.fromEntries(
    text
      .split('\n')
      .filter((line) => line.includes('='))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  ) as NodeJS.ProcessEnv;
  const endpoints = endpointsFromEnv(vars);
  if (!endpoints) throw new Error('.local/stack.env names no endpoints');
  return { ...endpoints, source: 'local-stack' };
}
