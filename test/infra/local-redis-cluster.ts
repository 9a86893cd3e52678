import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { onTestFinished } from 'vitest';
import { freePort } from './ports.js';

// A Redis Cluster of the test's own (the redis-server binary the stack runs): N masters, no replicas, on
// free loopback ports, nothing on disk. Stopped when the test finishes.

const run = promisify(execFile);
const SLOTS = 16384;

async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], {
    timeout: 5_000,
  });
  return stdout;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Slots covered by the node's CLUSTER SLOTS answer; ranges never overlap, so the sum is the coverage. */
async function slotsCovered(port: number): Promise<number> {
  const ranges = JSON.parse(await cli(port, '--json', 'cluster', 'slots')) as [
    number,
    number,
    ...unknown[],
  ][];
  return ranges.reduce((sum, [from, to]) => sum + to - from + 1, 0);
}

interface Node {
  readonly host: string;
  readonly port: number;
}

export class LocalRedisCluster {
  readonly #dirs: string[] = [];
  readonly #children: ChildProcess[] = [];
  readonly #exits: Promise<void>[] = [];

  private constructor(readonly nodes: readonly Node[]) {}

  static async start(options: { masters?: number } = {}): Promise<LocalRedisCluster> {
    const masters = options.masters ?? 3;
    // redis-cli --cluster create refuses fewer; fail before spawning anything.
    if (!Number.isInteger(masters) || masters < 3)
      throw new Error(`a Redis Cluster needs >= 3 masters, not ${masters}`);
    // One at a time: the OS could hand the same free port to two concurrent freePort calls.
    const ports: number[] = [];
    while (ports.length < masters * 2) {
      const port = await freePort();
      if (!ports.includes(port)) ports.push(port);
    }
    const cluster = new LocalRedisCluster(
      ports.slice(0, masters).map((port) => ({ host: '127.0.0.1', port })),
    );
    onTestFinished(() => cluster.stop());
    // Own bus ports: the default, port + 10000, was never checked free (and may exceed 65535).
    await Promise.all(cluster.nodes.map(({ port }, i) => cluster.#spawn(port, ports[masters + i]!)));
    await cluster.#create();
    await cluster.#awaitOk();
    return cluster;
  }

  /** The nodes as `host:port,host:port,...`, the form of a REDIS_CLUSTER_NODES setting. */
  get seeds(): string {
    return this.nodes.map(({ host, port }) => `${host}:${port}`).join(',');
  }

  async flushAll(): Promise<void> {
    await Promise.all(this.nodes.map(({ port }) => cli(port, 'flushall')));
  }

  async stop(): Promise<void> {
    for (const child of this.#children) child.kill('SIGKILL');
    await Promise.all(this.#exits);
    this.#children.length = 0;
    this.#exits.length = 0;
    for (const dir of this.#dirs) rmSync(dir, { recursive: true, force: true });
    this.#dirs.length = 0;
  }

  async #spawn(port: number, busPort: number): Promise<void> {
    const dir = mkdtempSync(join(tmpdir(), 'tidemark-service-redis-cluster-'));
    this.#dirs.push(dir);
    // nodes.conf is the node's cluster identity; a file per node, so no two nodes ever share one.
    const child = spawn(
      '/usr/bin/redis-server',
      [
        '--port',
        String(port),
        '--cluster-port',
        String(busPort),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, 'nodes.conf'),
        '--cluster-node-timeout',
        '5000',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
      ],
      { stdio: 'ignore' },
    );
    this.#children.push(child);
    this.#exits.push(
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.once('error', () => resolve());
      }),
    );
    const deadline = Date.now() + 10_000;
    while ((await cli(port, 'ping').catch(() => '')).trim() !== 'PONG') {
      if (child.exitCode !== null) throw new Error(`redis-server on ${port} exited at start`);
      if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not answer in 10 s`);
      await sleep(50);
    }
  }

  async #create(): Promise<void> {
    const args = [
      '--cluster',
      'create',
      ...this.seeds.split(','),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ];
    // stdin ignored: a prompt --cluster-yes does not cover reads EOF and aborts instead of hanging.
    const created = new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn('redis-cli', args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve({ code, output });
      });
    });
    const { code, output } = await created;
    // redis-cli colours its messages even into a pipe.
    const plain = output.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), '');
    if (code !== 0) throw new Error(`redis-cli --cluster create exited ${code}:\n${plain}`);
  }

  /** Every node must see the whole cluster, or the first client to seed from a lagging one gets CLUSTERDOWN. */
  async #awaitOk(): Promise<void> {
    const deadline = Date.now() + 20_000;
    for (const { host, port } of this.nodes) {
      let last = '';
      for (;;) {
        try {
          const state = /cluster_state:(\w+)/.exec(await cli(port, 'cluster', 'info'))?.[1];
          const covered = await slotsCovered(port);
          if (state === 'ok' && covered === SLOTS) break;
          last = `cluster_state:${state}, CLUSTER SLOTS covers ${covered}/${SLOTS}`;
        } catch (error) {
          last = String(error);
        }
        if (Date.now() > deadline) {
          throw new Error(`redis cluster node ${host}:${port} not ready after 20 s (${last})`);
        }
        await sleep(100);
      }
    }
  }
}
