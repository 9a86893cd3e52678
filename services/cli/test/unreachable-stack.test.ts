import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { describe, it, onTestFinished } from 'vitest';
import { closedPort, expectOneClearLine, tidemark, unreachableBound } from './run-cli.js';

// `pnpm tidemark <command>` with the stack down, or configured somewhere that does not answer: every
// command that needs the stack gives up within seconds with one line on stderr that names what it could
// not reach, where, and the variable that says where, instead of retrying for half a minute. Nothing
// here needs the stack: its parts are loopback ports that refuse, or tiny servers that accept.
// (stack.int.test.ts has the same with the real registry and Redis, and the reachable stack.)

const timeout = unreachableBound + 5_000;

async function listening(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // close() waits for connections the CLI may leave open when it fails; unref lets the worker go.
  onTestFinished(() => void server.close().unref());
  return (server.address() as AddressInfo).port;
}

/** A port that accepts TCP connections (and says nothing): reachable, as far as a preflight can tell. */
const acceptingPort = () => listening(createServer((socket) => socket.on('error', () => undefined)));

/** An HTTP server that answers every request with an empty JSON list, like a registry with no subjects. */
async function answeringRegistry(): Promise<string> {
  const server = createHttpServer((_request, response) => {
    response.setHeader('content-type', 'application/json');
    response.end('[]');
  });
  onTestFinished(() => server.closeAllConnections());
  return `http://127.0.0.1:${await listening(server)}/apis/ccompat/v7`;
}

describe('a tidemark command when the stack cannot be reached', () => {
  it.each([
    ['resume', ['resume', 'acme/x']],
    ['inspect', ['inspect', 'acme/x']],
    ['replay', ['replay']],
    ['ingest', ['ingest', 'x.json', '--format', 'openai-chat', '--session', 'acme/x']],
    ['report', ['report', '--sessions', '1', '--turns', '5']],
    ['start', ['start', '--no-demo']],
  ])(
    '%s exits non-zero within seconds with one line naming each part, its address and its variable',
    async (_name, args) => {
      const [kafka, registry, redis] = [await closedPort(), await closedPort(), await closedPort()];
      const run = await tidemark(args, {
        KAFKA_BROKERS: `127.0.0.1:${kafka}`,
        SCHEMA_REGISTRY_URL: `http://127.0.0.1:${registry}/apis/ccompat/v7`,
        REDIS_URL: `redis://127.0.0.1:${redis}`,
      });
      expectOneClearLine(run, [
        `Kafka at 127.0.0.1:${kafka} (KAFKA_BROKERS): connection refused`,
        `registry at http://127.0.0.1:${registry}/apis/ccompat/v7 (SCHEMA_REGISTRY_URL): connection refused`,
        `Redis at redis://127.0.0.1:${redis} (REDIS_URL): connection refused`,
      ]);
    },
    timeout,
  );

  it(
    'names only Kafka and KAFKA_BROKERS when the registry and Redis answer',
    async () => {
      const kafka = await closedPort();
      const run = await tidemark(['resume', 'acme/x'], {
        KAFKA_BROKERS: `127.0.0.1:${kafka}`,
        SCHEMA_REGISTRY_URL: await answeringRegistry(),
        REDIS_URL: `redis://127.0.0.1:${await acceptingPort()}`,
      });
      expectOneClearLine(
        run,
        [`Kafka at 127.0.0.1:${kafka} (KAFKA_BROKERS)`],
        ['REDIS_URL', 'SCHEMA_REGISTRY_URL'],
      );
    },
    timeout,
  );

  it(
    'names only Redis and REDIS_URL, without its password, when Kafka and the registry answer',
    async () => {
      const redis = await closedPort();
      const run = await tidemark(['resume', 'acme/x'], {
        KAFKA_BROKERS: `127.0.0.1:${await acceptingPort()}`,
        SCHEMA_REGISTRY_URL: await answeringRegistry(),
        REDIS_URL: `redis://:hunter2@127.0.0.1:${redis}`,
      });
      expectOneClearLine(
        run,
        [`Redis at redis://127.0.0.1:${redis} (REDIS_URL)`],
        ['KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL', 'hunter2'],
      );
    },
    timeout,
  );
});
