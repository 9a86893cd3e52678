import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './ports.js';

// A Kafka broker of a test's own (one KRaft node, broker and controller, the jars the local stack runs
// from its cache), on free loopback ports, that the test may SIGKILL, restart on the same data (topics and
// committed offsets survive, as on a real broker restart), freeze and thaw, without touching the shared
// stack. The schema registry stays the shared one: it keeps its schemas on the shared broker.

const infraDir = fileURLToPath(new URL('../../infra/', import.meta.url));
const cache = process.env.TIDEMARK_CACHE ?? join(homedir(), '.cache', 'tidemark');
const kafkaHome = join(cache, `kafka-${process.env.TIDEMARK_KAFKA_VERSION ?? '4.1.1'}`);
const java = process.env.TIDEMARK_KAFKA_JAVA_HOME
  ? join(process.env.TIDEMARK_KAFKA_JAVA_HOME, 'bin', 'java')
  : 'java';

const portOpen = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

/** A broker listener that advertises another port: where a fault proxy in front of it listens. */
export interface ProxiedListener {
  readonly port: number;
  readonly advertisedPort: number;
}

export class LocalKafka {
  readonly #dir = mkdtempSync(join(tmpdir(), 'tidemark-kafka-'));
  #child: ChildProcess | null = null;
  #exited: Promise<void> = Promise.resolve();

  private constructor(
    readonly port: number,
    readonly controllerPort: number,
    readonly proxied: ProxiedListener | null,
  ) {}

  /**
   * Formats its storage and starts it; resolves once the broker port accepts connections. With
   * `proxied`, a second listener on `proxied.port` advertises `proxied.advertisedPort`: a client
   * bootstrapped from a proxy there sends all its traffic through it (see fault-proxy.ts).
   */
  static async start(options: { readonly proxied?: ProxiedListener } = {}): Promise<LocalKafka> {
    const kafka = new LocalKafka(await freePort(), await freePort(), options.proxied ?? null);
    kafka.#format();
    await kafka.restart();
    return kafka;
  }

  get brokers(): string[] {
    return [`127.0.0.1:${this.port}`];
  }

  #javaArgs(config: string): string[] {
    return [
      `-Dlog4j2.configurationFile=${join(infraDir, 'kafka', config)}`,
      `-Dkafka.logs.dir=${join(this.#dir, 'logs')}`,
      '-Djava.awt.headless=true',
      '-cp',
      `${join(kafkaHome, 'libs')}/*`,
    ];
  }

  #format(): void {
    mkdirSync(join(this.#dir, 'data'), { recursive: true });
    const props = join(this.#dir, 'server.properties');
    writeFileSync(
      props,
      [
        'process.roles=broker,controller',
        'node.id=1',
        `controller.quorum.voters=1@127.0.0.1:${this.controllerPort}`,
        'controller.listener.names=CONTROLLER',
        `listeners=PLAINTEXT://127.0.0.1:${this.port},CONTROLLER://127.0.0.1:${this.controllerPort}${
          this.proxied === null ? '' : `,PROXIED://127.0.0.1:${this.proxied.port}`
        }`,
        `advertised.listeners=PLAINTEXT://127.0.0.1:${this.port}${
          this.proxied === null ? '' : `,PROXIED://127.0.0.1:${this.proxied.advertisedPort}`
        }`,
        'inter.broker.listener.name=PLAINTEXT',
        `listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT${
          this.proxied === null ? '' : ',PROXIED:PLAINTEXT'
        }`,
        `log.dirs=${join(this.#dir, 'data')}`,
        'num.partitions=1',
        'default.replication.factor=1',
        'min.insync.replicas=1',
        'offsets.topic.replication.factor=1',
        'offsets.topic.num.partitions=3',
        'transaction.state.log.replication.factor=1',
        'transaction.state.log.min.isr=1',
        'transaction.state.log.num.partitions=3',
        'share.coordinator.state.topic.replication.factor=1',
        'share.coordinator.state.topic.min.isr=1',
        'group.initial.rebalance.delay.ms=0',
        'auto.create.topics.enable=false',
        'delete.topic.enable=true',
        '',
      ].join('\n'),
    );
    // A Kafka Uuid: 16 random bytes, URL-safe base64 without padding, not starting with '-'.
    let id = '';
    do id = randomBytes(16).toString('base64url');
    while (id.startsWith('-'));
    const formatted = spawnSync(
      java,
      [
        '-Xmx256m',
        ...this.#javaArgs('log4j2-tools.properties'),
        'kafka.tools.StorageTool',
        'format',
        '-t',
        id,
        '-c',
        props,
      ],
      { encoding: 'utf8' },
    );
    if (formatted.status !== 0) {
      throw new Error(
        `kafka storage format failed (${java}, ${kafkaHome}):\n${formatted.stdout}${formatted.stderr}`,
      );
    }
  }

  /**
   * Starts the broker on its data (after start or kill) and waits until its port accepts connections.
   * After a SIGKILL that takes ≈10 s more than a first start: the controller fences the old registration
   * only once its broker session (9 s) has expired.
   */
  async restart(): Promise<void> {
    if (this.#child !== null) throw new Error('this broker is already running');
    const log = openSync(join(this.#dir, 'broker.log'), 'a');
    const child = spawn(
      java,
      [
        '-Xms128m',
        '-Xmx512m',
        '-XX:+UseG1GC',
        ...this.#javaArgs('log4j2.properties'),
        'kafka.Kafka',
        join(this.#dir, 'server.properties'),
      ],
      // Its own process group (killed whole), its output in its folder (named when it fails to start).
      { stdio: ['ignore', log, log], detached: true },
    );
    closeSync(log);
    this.#child = child;
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()));
    void this.#exited.then(() => {
      if (this.#child === child) this.#child = null;
    });
    const deadline = Date.now() + 60_000;
    while (!(await portOpen(this.port))) {
      if (this.#child !== child)
        throw new Error(`the broker on ${this.port} exited at start (its output: ${this.#dir}/broker.log)`);
      if (Date.now() > deadline) throw new Error(`the broker on ${this.port} did not open its port in 60 s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** SIGKILL: no clean shutdown, as a crashed broker. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (child === null) return;
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    await this.#exited;
    this.#child = null;
  }

  /** SIGSTOP: connections stay open and nothing answers, until thaw. */
  freeze(): void {
    if (this.#child?.pid !== undefined) process.kill(-this.#child.pid, 'SIGSTOP');
  }

  thaw(): void {
    if (this.#child?.pid !== undefined) process.kill(-this.#child.pid, 'SIGCONT');
  }

  async stop(): Promise<void> {
    this.thaw();
    await this.kill();
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
