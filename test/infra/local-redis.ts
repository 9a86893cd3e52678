import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { freePort } from './ports.js';

// A redis-server of the test's own (the binary the stack runs), on a free loopback port, that the test
// may kill, freeze and restart without touching the shared stack. Nothing on disk: a restart comes back
// empty. Stopped (and thawed first) when the test finishes.

async function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => {
      socket.destroy();
      resolve(data.toString().startsWith('+PONG'));
    });
    socket.once('error', () => resolve(false));
    socket.setTimeout(500, () => {
      socket.destroy();
      resolve(false);
    });
  });
}

export class LocalRedis {
  readonly #dir = mkdtempSync(join(tmpdir(), 'tidemark-service-redis-'));
  #child: ChildProcess | null = null;
  #exited: Promise<void> = Promise.resolve();

  private constructor(readonly port: number) {}

  static async start(): Promise<LocalRedis> {
    const redis = new LocalRedis(await freePort());
    onTestFinished(() => redis.stop());
    await redis.restart();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts the server (empty) on its port and waits until it answers PING. */
  async restart(): Promise<void> {
    if (this.#child !== null) throw new Error('redis-server is already running');
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        this.#dir,
      ],
      { stdio: 'ignore' },
    );
    this.#child = child;
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const deadline = Date.now() + 10_000;
    while (!(await answersPing(this.port))) {
      if (child.exitCode !== null) throw new Error(`redis-server on ${this.port} exited at start`);
      if (Date.now() > deadline) throw new Error(`redis-server on ${this.port} did not answer in 10 s`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** SIGKILL: the connections drop and everything it held is gone. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (child === null) return;
    child.kill('SIGKILL');
    await this.#exited;
    this.#child = null;
  }

  /** SIGSTOP: connections stay open and nothing answers, until thaw(). */
  freeze(): void {
    this.#child?.kill('SIGSTOP');
  }

  thaw(): void {
    this.#child?.kill('SIGCONT');
  }

  async stop(): Promise<void> {
    this.thaw();
    await this.kill();
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
