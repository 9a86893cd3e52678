import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { describeUnreachable, preflight, StackUnreachableError, unreachableParts } from '../src/preflight.js';
import { closedPort } from './run-cli.js';

// The preflight asks each part of the stack for an answer by a deadline and says, as values, which did
// not answer, where it was looked for and the variable that says where. Its "stack" here: loopback
// ports that refuse, servers that accept, and a registry that accepts and never answers.

async function listening(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => void server.close().unref());
  return (server.address() as AddressInfo).port;
}

const acceptingPort = () => listening(createServer((socket) => socket.on('error', () => undefined)));

async function registry(answer: boolean): Promise<string> {
  const server = createHttpServer((_request, response) => {
    if (answer) response.end('[]');
  });
  onTestFinished(() => server.closeAllConnections());
  return `http://127.0.0.1:${await listening(server)}/apis/ccompat/v7`;
}

describe('the stack preflight', () => {
  it('finds nothing unreachable when every part answers', async () => {
    const stack = {
      KAFKA_BROKERS: [`127.0.0.1:${await acceptingPort()}`],
      SCHEMA_REGISTRY_URL: await registry(true),
      REDIS_URL: `redis://127.0.0.1:${await acceptingPort()}`,
    };
    expect(await unreachableParts(stack)).toEqual([]);
  });

  it('finds Kafka reachable when any one of its seed brokers answers', async () => {
    const stack = {
      KAFKA_BROKERS: [`127.0.0.1:${await closedPort()}`, `127.0.0.1:${await acceptingPort()}`],
      SCHEMA_REGISTRY_URL: await registry(true),
      REDIS_URL: `redis://127.0.0.1:${await acceptingPort()}`,
    };
    expect(await unreachableParts(stack)).toEqual([]);
  });

  it('on a Redis Cluster checks its nodes (any one answering will do), not REDIS_URL, and names them', async () => {
    const [down, alsoDown, up] = [await closedPort(), await closedPort(), await acceptingPort()];
    const base = {
      KAFKA_BROKERS: [`127.0.0.1:${await acceptingPort()}`],
      SCHEMA_REGISTRY_URL: await registry(true),
      REDIS_URL: `redis://127.0.0.1:${down}`,
    };
    const nodes = [`127.0.0.1:${down}`, `127.0.0.1:${up}`];
    expect(await unreachableParts({ ...base, REDIS_CLUSTER_NODES: nodes })).toEqual([]);
    const lost = [`127.0.0.1:${down}`, `127.0.0.1:${alsoDown}`];
    expect(await unreachableParts({ ...base, REDIS_CLUSTER_NODES: lost })).toEqual([
      {
        part: 'Redis',
        address: lost.join(','),
        variable: 'REDIS_CLUSTER_NODES',
        reason: 'connection refused',
      },
    ]);
  });

  it('names each part that refuses, where it was looked for, and its variable', async () => {
    const [a, b, registryPort, redis] = [
      await closedPort(),
      await closedPort(),
      await closedPort(),
      await closedPort(),
    ];
    const stack = {
      KAFKA_BROKERS: [`127.0.0.1:${a}`, `127.0.0.1:${b}`],
      SCHEMA_REGISTRY_URL: `http://user:secret@127.0.0.1:${registryPort}/apis/ccompat/v7`,
      REDIS_URL: `redis://:secret@127.0.0.1:${redis}/0`,
    };
    expect(await unreachableParts(stack)).toEqual([
      {
        part: 'Kafka',
        address: `127.0.0.1:${a},127.0.0.1:${b}`,
        variable: 'KAFKA_BROKERS',
        reason: 'connection refused',
      },
      {
        part: 'the schema registry',
        address: `http://127.0.0.1:${registryPort}/apis/ccompat/v7`,
        variable: 'SCHEMA_REGISTRY_URL',
        reason: 'connection refused',
      },
      {
        part: 'Redis',
        address: `redis://127.0.0.1:${redis}/0`,
        variable: 'REDIS_URL',
        reason: 'connection refused',
      },
    ]);
  });

  it('gives up on a part that accepts and never answers at the deadline', async () => {
    const stack = {
      KAFKA_BROKERS: [`127.0.0.1:${await acceptingPort()}`],
      SCHEMA_REGISTRY_URL: await registry(false),
      REDIS_URL: `redis://127.0.0.1:${await acceptingPort()}`,
    };
    const started = Date.now();
    const unreachable = await unreachableParts(stack, 200);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(unreachable).toEqual([
      expect.objectContaining({ variable: 'SCHEMA_REGISTRY_URL', reason: 'no answer within 0.2 s' }),
    ]);
  });

  it('throws one line that names the parts and how to start the local stack', async () => {
    const kafka = await closedPort();
    const env = {
      KAFKA_BROKERS: `127.0.0.1:${kafka}`,
      SCHEMA_REGISTRY_URL: await registry(true),
      REDIS_URL: `redis://127.0.0.1:${await acceptingPort()}`,
    };
    const error = await preflight(env).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StackUnreachableError);
    expect((error as Error).message).toBe(
      `cannot reach Kafka at 127.0.0.1:${kafka} (KAFKA_BROKERS): connection refused. ` +
        'Is the stack up? Start the local one with: pnpm infra:up',
    );
  });

  it('joins several parts into one line', () => {
    const line = describeUnreachable([
      { part: 'Kafka', address: 'k:1', variable: 'KAFKA_BROKERS', reason: 'connection refused' },
      { part: 'Redis', address: 'redis://r:2', variable: 'REDIS_URL', reason: 'no answer within 3 s' },
    ]);
    expect(line).toBe(
      'cannot reach Kafka at k:1 (KAFKA_BROKERS): connection refused; Redis at redis://r:2 (REDIS_URL): ' +
        'no answer within 3 s. Is the stack up? Start the local one with: pnpm infra:up',
    );
    expect(line).not.toContain('\n');
  });
});
