import { connect, createServer, type Server, type Socket } from 'node:net';
import { endpoints, freePort } from '@tidemark/test-infra';
import { describe, expect, it, onTestFinished } from 'vitest';
import { harness } from './harness.js';
import { exited, startProcess } from './process.js';

// A service process started while the broker is away (a whole-stack restart, the broker still coming
// up): it keeps trying, with a fresh service each time, and starts once the broker answers; if it never
// does within START_WITHIN_MS the process exits 1, so a supervisor sees a failure (it used to exit 0).
// The broker "comes up" as a TCP forwarder to the real one, opened on the address the process was given.

/** Forwards connections on `port` to the stack's broker (which then advertises its own address). */
async function forwardToBroker(port: number): Promise<Server> {
  const [host, brokerPort] = endpoints().kafkaBrokers[0]!.split(':') as [string, string];
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect({ host, port: Number(brokerPort) });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  onTestFinished(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return server;
}

const readyz = (port: number): Promise<number> =>
  fetch(`http://127.0.0.1:${port}/readyz`).then(
    (r) => r.status,
    () => 0,
  );

describe('a service process started before the broker', () => {
  it('keeps trying, and starts once the broker answers', async () => {
    const h = await harness();
    const [brokerPort, httpPort] = [await freePort(), await freePort()];
    const lines: string[] = [];
    const child = startProcess(
      { ...h.env, KAFKA_BROKERS: `127.0.0.1:${brokerPort}`, HTTP_PORT: String(httpPort), LOG_LEVEL: 'warn' },
      (line) => lines.push(line),
    );
    const retried = () => lines.some((line) => line.includes('could not start (a dependency away?)'));
    for (const deadline = Date.now() + 60_000; !retried() && Date.now() < deadline;) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(retried(), lines.join('\n')).toBe(true);
    expect(child.exitCode).toBeNull();

    await forwardToBroker(brokerPort);
    let status = 0;
    for (const deadline = Date.now() + 90_000; status !== 200 && Date.now() < deadline;) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      status = await readyz(httpPort);
    }
    expect(status, lines.join('\n')).toBe(200);
    expect(lines.filter((line) => line.includes('failed to start'))).toEqual([]);
    child.kill('SIGTERM');
    await exited(child);
    expect(child.exitCode).toBe(0);
  });

  it('exits 1 when the broker does not come within START_WITHIN_MS', async () => {
    const h = await harness();
    const lines: string[] = [];
    const child = startProcess(
      {
        ...h.env,
        KAFKA_BROKERS: `127.0.0.1:${await freePort()}`,
        HTTP_PORT: String(await freePort()),
        START_WITHIN_MS: '3000',
        LOG_LEVEL: 'warn',
      },
      (line) => lines.push(line),
    );
    await exited(child);
    expect(child.exitCode, lines.join('\n')).toBe(1);
    expect(lines.some((line) => line.includes('materializer failed to start'))).toBe(true);
  });
});
