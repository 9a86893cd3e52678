import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { connectTidemark, type TidemarkClient } from '@tidemark/client';
import {
  demoEnv,
  dropDeployment,
  startPipeline,
  waitUntilReady,
  type Env,
  type Pipeline,
} from '@tidemark/cli';
import type { ScenarioSession } from '@tidemark/scenarios';
import { createLogger } from '@tidemark/service';
import { endpoints } from '@tidemark/test-infra';

// The whole pipeline for one end-to-end test file, on topics and Redis keys of its own, torn down after.

export async function e2ePipeline(
  scenarios: readonly ScenarioSession[],
  extra: Env = {},
): Promise<{ pipeline: Pipeline; env: Env; stop: () => Promise<void> }> {
  const { kafkaBrokers, schemaRegistryUrl, redisUrl } = endpoints();
  const run = randomUUID().slice(0, 8);
  const env = await demoEnv(
    {
      KAFKA_BROKERS: kafkaBrokers.join(','),
      SCHEMA_REGISTRY_URL: schemaRegistryUrl,
      REDIS_URL: redisUrl,
      TOPIC_PREFIX: `e2e-${run}.`,
      REDIS_PREFIX: `e2e-${run}:`,
      LOG_LEVEL: 'warn',
      ...extra,
    },
    scenarios,
  );
  const logger = createLogger('e2e', 'warn');
  const pipeline = await startPipeline({ env, logger, port: 0 });
  await waitUntilReady(pipeline.host);
  const stop = async () => {
    await pipeline.stop();
    await dropDeployment(env);
  };
  return { pipeline, env, stop };
}

/** The real client of an e2e pipeline, for one tenant and its token. */
export function connectClient(
  e2e: { readonly pipeline: Pipeline; readonly env: Env },
  tenantId: string,
  token: string,
): Promise<TidemarkClient> {
  return connectTidemark({
    brokers: e2e.env.KAFKA_BROKERS!.split(','),
    registryUrl: e2e.env.SCHEMA_REGISTRY_URL!,
    topicPrefix: e2e.env.TOPIC_PREFIX ?? '',
    resumeUrl: e2e.pipeline.url,
    token,
    tenantId,
  });
}

const root = fileURLToPath(new URL('../../', import.meta.url));

/** `tidemark <args>` as a person runs it, on the pipeline's stack (`extra`: more environment). */
export function runTidemark(
  e2e: { readonly env: Env },
  args: readonly string[],
  extra: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'services/cli/src/main.ts', ...args], {
    cwd: root,
    env: { ...process.env, ...e2e.env, ...extra },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** `tidemark mcp T/S` as an agent's MCP client starts it: over stdio, in the deployment's environment. */
export async function connectMcp(
  e2e: { readonly env: Env },
  tenantId: string,
  sessionId: string,
): Promise<Client> {
  const env = Object.fromEntries(
    Object.entries({ ...process.env, ...e2e.env }).filter(
      (entry): entry is [string, string] => entry[1] !== undefined,
    ),
  );
  const connected = new Client({ name: 'tidemark-e2e', version: '1.0.0' });
  await connected.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', 'services/cli/src/main.ts', 'mcp', `${tenantId}/${sessionId}`],
      cwd: root,
      env,
      stderr: 'ignore',
    }),
  );
  return connected;
}

/**
 * A resume's messages as text to compare with another session's (a control run of the same turns): the
 * control's session id read as the session's, and content-derived ids (which name the session) masked.
 */
export function resumeText(
  answer: { readonly messages?: unknown },
  controlSessionId: string,
  sessionId: string,
): string {
  return JSON.stringify(answer.messages)
    .replaceAll(controlSessionId, sessionId)
    .replace(/[0-9a-f]{16,}/g, 'id');
}
