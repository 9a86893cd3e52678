// Tidemark's local stack without Docker: Redis, one Apache Kafka node (KRaft, broker + controller)
// and Apicurio Registry (Confluent-compatible API, schemas stored in Kafka), as plain processes on
// loopback. Callers run it through its wrapper:
//
//   bash infra/stack.sh up | down [--purge] | reset | status | logs [component] [-n N] | fetch
//   bash infra/stack.sh topics <kafka-topics args>      (TopicCommand against the local broker)
//
// Each component is one row of the `components` table: what it downloads, how it starts, how we know
// it is ready, how it stops. The commands at the bottom only walk that table (up in its order, down in
// reverse). Artifacts come from Maven Central into a cache outside the repository; data, logs and pid
// files live in <repo>/.local/. See infra/README.md.
import { spawn, spawnSync, type SpawnSyncOptions, type SpawnSyncReturns } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

// ---------------------------------------------------------------------------------------------
// Where things live, and the settings (all from the environment; see the README's table)

const infraDir = dirname(fileURLToPath(import.meta.url));
const localDir = join(fs.realpathSync(join(infraDir, '..')), '.local');
const runDir = join(localDir, 'run');
const logDir = join(localDir, 'logs');
const stackEnvFile = join(localDir, 'stack.env');

/** Empty counts as unset, as `${VAR:-default}` does in the shell. */
const setting = (name: string, fallback: string): string => process.env[name] || fallback;
const secondsSetting = (name: string, fallback: number): number => Number(setting(name, String(fallback)));

const cacheDir = setting('TIDEMARK_CACHE', join(process.env.HOME || '/tmp', '.cache', 'tidemark'));
const mavenRepo = setting('TIDEMARK_M2_REPO', join(cacheDir, 'm2'));
const kafkaVersion = setting('TIDEMARK_KAFKA_VERSION', '4.1.1');
const registryVersion = setting('TIDEMARK_REGISTRY_VERSION', '3.3.3');
const kafkaHome = join(cacheDir, `kafka-${kafkaVersion}`);
const registryHome = join(cacheDir, `apicurio-registry-${registryVersion}`);

const port = {
  kafka: setting('TIDEMARK_KAFKA_PORT', '19092'),
  kafkaController: setting('TIDEMARK_KAFKA_CONTROLLER_PORT', '19093'),
  // Network-fault tests put a TCP proxy between clients and the broker: the broker listens on
  // kafkaProxied but advertises kafkaProxy (where the test's proxy listens), so clients cannot bypass
  // the proxy after their first metadata round trip. TIDEMARK_KAFKA_PROXY_PORT=off leaves it out.
  kafkaProxied: setting('TIDEMARK_KAFKA_PROXIED_PORT', '19094'),
  kafkaProxy: setting('TIDEMARK_KAFKA_PROXY_PORT', '19095'),
  registry: setting('TIDEMARK_REGISTRY_PORT', '18080'),
  registryManagement: setting('TIDEMARK_REGISTRY_MGMT_PORT', '19000'),
  redis: setting('TIDEMARK_REDIS_PORT', '16379'),
};
const proxiedListenerWanted = port.kafkaProxy !== 'off';
const kafkaNodeId = 1;
// Apicurio's kafkasql start-up waits out several consumer polls on its (normally empty) snapshots
// topic; its default 5000 ms poll makes that ~20 s on every start. 1000 ms takes ~15 s off.
const registryPollMs = setting('TIDEMARK_REGISTRY_POLL_MS', '1000');

// ---------------------------------------------------------------------------------------------
// The components, in start order (down stops them in reverse: the registry needs Kafka to stop well)

type ComponentName = 'redis' | 'kafka' | 'registry';

interface Component {
  name: ComponentName;
  /** What `status` shows as its address. */
  address: string;
  /** Loopback ports it listens on; if anything else holds one, it cannot start. */
  ports: string[];
  readyTimeoutS: number;
  stopTimeoutS: number;
  /** Downloaded into the cache before the first start; none for a system package. */
  artifact?: { isCached: () => boolean; fetch: () => void };
  /** Tells this checkout's process apart from any other (another checkout's stack, a test's own). */
  isOurs: (pid: number, cmdline: string) => boolean;
  /** Checks prerequisites, writes config, and says what to run. Called with its log freshly rotated. */
  launch: () => Launch;
  isReady: () => Promise<boolean>;
  /** Asks it to exit; SIGTERM when absent. */
  requestStop?: (pid: number) => void;
}

interface Launch {
  announce: string;
  cwd: string;
  command: string[];
}

const components: Component[] = [
  {
    name: 'redis',
    address: `redis://127.0.0.1:${port.redis}`,
    ports: [port.redis],
    readyTimeoutS: secondsSetting('TIDEMARK_REDIS_TIMEOUT', 15),
    stopTimeoutS: 10,
    // Redis shows itself as "redis-server 127.0.0.1:<port>" and has no -D marker: the working directory
    // tells our instance from another checkout's on the same port number.
    isOurs: (pid, cmdline) =>
      cmdline.includes('redis-server') &&
      cmdline.includes(`:${port.redis}`) &&
      orElse(() => fs.readlinkSync(`/proc/${pid}/cwd`), '') === join(localDir, 'redis'),
    launch: launchRedis,
    isReady: redisAnswersPing,
    requestStop: (pid) => {
      const shutdown = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', port.redis, 'shutdown', 'nosave'], {
        stdio: 'ignore',
        timeout: 5000,
      });
      if (shutdown.status !== 0) sendSignal(pid, 'SIGTERM');
    },
  },
  {
    name: 'kafka',
    address: `127.0.0.1:${port.kafka} (controller :${port.kafkaController})`,
    ports: [port.kafka, port.kafkaController, ...(proxiedListenerWanted ? [port.kafkaProxied] : [])],
    readyTimeoutS: secondsSetting('TIDEMARK_KAFKA_TIMEOUT', 90),
    stopTimeoutS: secondsSetting('TIDEMARK_KAFKA_STOP_TIMEOUT', 45),
    artifact: { isCached: kafkaJarsCached, fetch: fetchKafkaJars },
    isOurs: (_pid, cmdline) => cmdline.includes(javaMarker('kafka')),
    launch: launchKafka,
    isReady: kafkaAnswersMetadata,
  },
  {
    name: 'registry',
    address: `http://127.0.0.1:${port.registry}/apis/ccompat/v7 (mgmt :${port.registryManagement})`,
    ports: [port.registry, port.registryManagement],
    readyTimeoutS: secondsSetting('TIDEMARK_REGISTRY_TIMEOUT', 150),
    stopTimeoutS: secondsSetting('TIDEMARK_REGISTRY_STOP_TIMEOUT', 45),
    artifact: { isCached: registryCached, fetch: fetchRegistry },
    isOurs: (_pid, cmdline) => cmdline.includes(javaMarker('registry')),
    launch: launchRegistry,
    isReady: registryAnswers,
  },
];

// ---------------------------------------------------------------------------------------------
// Redis: the system package, persistence off (tests rely on Redis losing everything on restart)

// Tests count on a restarted Redis coming back empty (the projection must detect the loss and rebuild).
const nothingOnDisk = ['--save', '', '--appendonly', 'no'];

function launchRedis(): Launch {
  if (!onPath('redis-server')) {
    fail('redis-server not found: apt-get install -y redis-server (or run scripts/bootstrap.sh)');
  }
  const dir = join(localDir, 'redis');
  fs.mkdirSync(dir, { recursive: true });
  return {
    announce: `starting redis on 127.0.0.1:${port.redis}…`,
    cwd: dir,
    command: ['redis-server', '--port', port.redis, '--bind', '127.0.0.1', ...nothingOnDisk],
  };
}

function redisAnswersPing(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port: Number(port.redis) });
    let reply = '';
    const finish = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2000, () => finish(false));
    socket.on('error', () => finish(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString();
      if (reply.includes('\n')) finish(reply.startsWith('+PONG'));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Kafka: jars resolved by infra/kafka/pom.xml, one combined KRaft node with a static voter list

function kafkaStamp(): string {
  const pomHash = createHash('sha256')
    .update(fs.readFileSync(join(infraDir, 'kafka', 'pom.xml')))
    .digest('hex');
  return `kafka ${kafkaVersion}\n${pomHash}\n`;
}

function kafkaJarsCached(): boolean {
  return readOrEmpty(join(kafkaHome, '.complete')).trimEnd() === kafkaStamp().trimEnd();
}

function fetchKafkaJars(): void {
  if (kafkaJarsCached()) return;
  const started = performance.now();
  say(`resolving Kafka ${kafkaVersion} jars into ${kafkaHome} (first run downloads ~45 MB)…`);
  withScratchDir(`.kafka-${kafkaVersion}`, (scratch) => {
    const libs = join(scratch, 'libs');
    fs.mkdirSync(libs);
    runMaven(
      [
        `-Dkafka.version=${kafkaVersion}`,
        'dependency:copy-dependencies',
        '-DincludeScope=runtime',
        `-DoutputDirectory=${libs}`,
      ],
      `could not resolve Kafka ${kafkaVersion} from Maven Central (see above)`,
    );
    const jars = fs.readdirSync(libs);
    if (!jars.includes(`kafka_2.13-${kafkaVersion}.jar`)) {
      fail(`kafka_2.13-${kafkaVersion}.jar missing after resolution`);
    }
    // Kafka's poms leave the logging backend out: without exactly one binding the broker runs silently.
    const slf4jBinding =
      /^(log4j-slf4j2?-impl|slf4j-(simple|nop|jdk14|jdk-platform-logging|reload4j|log4j12)|logback-classic)-/;
    const bindings = jars.filter((jar) => slf4jBinding.test(jar));
    if (bindings.length !== 1 || !bindings[0]!.startsWith('log4j-slf4j2-impl-')) {
      fail(
        `expected exactly one SLF4J binding (log4j-slf4j2-impl) among Kafka's jars, found: ${bindings.join(', ') || 'none'}`,
      );
    }
    fs.rmSync(kafkaHome, { recursive: true, force: true });
    fs.renameSync(scratch, kafkaHome);
  });
  fs.writeFileSync(join(kafkaHome, '.complete'), kafkaStamp());
  const jarCount = fs.readdirSync(join(kafkaHome, 'libs')).length;
  say(
    `kafka jars ready in ${secondsSince(started)}s (${jarCount} jars, ${diskUsage(join(kafkaHome, 'libs'))})`,
  );
}

/** The marker by which our Java processes are found again: the pid file may be lost, the process not. */
function javaMarker(component: string): string {
  return `-Dtidemark.component=${component} -Dtidemark.home=${localDir} `;
}

function kafkaJavaCommand(component: string, jvmOptions: string[], log4jConfig: string): string[] {
  return [
    findKafkaJava(),
    `-Dtidemark.component=${component}`,
    `-Dtidemark.home=${localDir}`,
    ...jvmOptions,
    `-Dlog4j2.configurationFile=${join(infraDir, 'kafka', log4jConfig)}`,
    `-Dkafka.logs.dir=${logDir}`,
    '-Djava.awt.headless=true',
    '-cp',
    `${kafkaHome}/libs/*`,
  ];
}

function kafkaServerProperties(): string {
  const listeners = [`PLAINTEXT://127.0.0.1:${port.kafka}`, `CONTROLLER://127.0.0.1:${port.kafkaController}`];
  const advertised = [`PLAINTEXT://127.0.0.1:${port.kafka}`];
  const protocols = ['PLAINTEXT:PLAINTEXT', 'CONTROLLER:PLAINTEXT'];
  if (proxiedListenerWanted) {
    listeners.push(`PROXIED://127.0.0.1:${port.kafkaProxied}`);
    advertised.push(`PROXIED://127.0.0.1:${port.kafkaProxy}`);
    protocols.push('PROXIED:PLAINTEXT');
  }
  return `# Generated by infra/stack.ts at every start; edit the script, not this file.
process.roles=broker,controller
node.id=${kafkaNodeId}
controller.quorum.voters=${kafkaNodeId}@127.0.0.1:${port.kafkaController}
controller.listener.names=CONTROLLER
listeners=${listeners.join(',')}
advertised.listeners=${advertised.join(',')}
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=${protocols.join(',')}
log.dirs=${join(localDir, 'kafka', 'data')}
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=5
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=5
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
delete.topic.enable=true
`;
}

function launchKafka(): Launch {
  const dir = join(localDir, 'kafka');
  const properties = join(dir, 'server.properties');
  fs.mkdirSync(join(dir, 'data'), { recursive: true });
  fs.writeFileSync(properties, kafkaServerProperties());
  if (!fs.existsSync(join(dir, 'data', 'meta.properties'))) formatKafkaStorage(dir, properties);
  const java = findKafkaJava();
  return {
    announce: `starting kafka ${kafkaVersion} on 127.0.0.1:${port.kafka} (controller :${port.kafkaController}, java ${javaVersion(java)})…`,
    cwd: dir,
    command: [
      ...kafkaJavaCommand(
        'kafka',
        // Kafka's own G1 settings, with a heap that is plenty for tests
        [
          '-Xms256m',
          '-Xmx768m',
          '-XX:+UseG1GC',
          '-XX:MaxGCPauseMillis=20',
          '-XX:InitiatingHeapOccupancyPercent=35',
          '-XX:+ExplicitGCInvokesConcurrent',
          '-XX:MaxInlineLevel=15',
          '-XX:+ExitOnOutOfMemoryError',
        ],
        'log4j2.properties',
      ),
      'kafka.Kafka',
      properties,
    ],
  };
}

/** First start only: KRaft needs its storage stamped with a cluster id, kept so a re-format matches. */
function formatKafkaStorage(dir: string, properties: string): void {
  const clusterIdFile = join(dir, 'cluster.id');
  if (!readOrEmpty(clusterIdFile).trim()) {
    // A Kafka Uuid is 16 random bytes in URL-safe base64; Kafka refuses one starting with '-'.
    let id: string;
    do id = randomBytes(16).toString('base64url');
    while (id.startsWith('-'));
    fs.writeFileSync(clusterIdFile, `${id}\n`);
  }
  const clusterId = fs.readFileSync(clusterIdFile, 'utf8').trim();
  say(`formatting kafka storage (cluster ${clusterId})…`);
  const log = fs.openSync(logFile('kafka'), 'a');
  const format = run(
    [
      ...kafkaJavaCommand('kafka-format', ['-Xmx256m'], 'log4j2-tools.properties'),
      ...['kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', properties, '--ignore-formatted'],
    ],
    { stdio: ['ignore', log, log] },
  );
  fs.closeSync(log);
  if (format.status !== 0) {
    showLogTail(logFile('kafka'));
    fail('kafka storage format failed');
  }
}

/** A KRaft broker serves its listener only once caught up and unfenced, so Metadata listing it means ready. */
async function kafkaAnswersMetadata(): Promise<boolean> {
  if (!(await portOpen(port.kafka))) return false;
  const probe = join(infraDir, 'kafka', 'probe.mjs');
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [probe, '127.0.0.1', port.kafka, String(kafkaNodeId), '3000'], {
      stdio: 'ignore',
    });
    child.on('error', () => resolve(false));
    child.on('exit', (code) => resolve(code === 0));
  });
}

// ---------------------------------------------------------------------------------------------
// Apicurio Registry: the Quarkus distribution from Maven Central, on Java 21+, schemas kept in Kafka

function registryCached(): boolean {
  return (
    fs.existsSync(join(registryHome, '.complete')) && fs.existsSync(join(registryHome, 'quarkus-run.jar'))
  );
}

function fetchRegistry(): void {
  if (registryCached()) return;
  const started = performance.now();
  const coordinates = `io.apicurio:apicurio-registry-app:${registryVersion}:tar.gz:all`;
  say(`fetching Apicurio Registry ${registryVersion} into ${registryHome} (first run downloads ~160 MB)…`);
  withScratchDir(`.apicurio-${registryVersion}`, (scratch) => {
    const download = join(scratch, 'dl');
    const unpacked = join(scratch, 'dist');
    fs.mkdirSync(download);
    fs.mkdirSync(unpacked);
    runMaven(
      ['dependency:copy', `-Dartifact=${coordinates}`, `-DoutputDirectory=${download}`],
      `could not fetch ${coordinates} from Maven Central (see above)`,
    );
    const tarball = fs.readdirSync(download).find((file) => file.endsWith('.tar.gz'));
    if (!tarball) fail(`no tarball after fetching ${coordinates}`);
    if (
      spawnSync('tar', ['-xzf', join(download, tarball), '-C', unpacked], { stdio: 'inherit' }).status !== 0
    ) {
      fail(`could not extract ${join(download, tarball)}`);
    }
    if (!fs.existsSync(join(unpacked, 'quarkus-run.jar')))
      fail(`quarkus-run.jar not at the root of ${coordinates}`);
    fs.rmSync(registryHome, { recursive: true, force: true });
    fs.renameSync(unpacked, registryHome);
  });
  // The unpacked copy is the cache: the 160 MB tarball need not stay in our private Maven repository
  // (a repository the user chose with TIDEMARK_M2_REPO is left alone).
  if (!process.env.TIDEMARK_M2_REPO) {
    const tarballDir = join(mavenRepo, 'io', 'apicurio', 'apicurio-registry-app', registryVersion);
    for (const file of readdirOrEmpty(tarballDir).filter((f) => f.endsWith('.tar.gz'))) {
      fs.rmSync(join(tarballDir, file), { force: true });
    }
  }
  fs.writeFileSync(join(registryHome, '.complete'), `${coordinates}\n`);
  say(`registry distribution ready in ${secondsSince(started)}s (${diskUsage(registryHome)})`);
}

function launchRegistry(): Launch {
  const java = findRegistryJava();
  const dir = join(localDir, 'registry');
  fs.mkdirSync(dir, { recursive: true });
  return {
    announce: `starting apicurio registry ${registryVersion} on 127.0.0.1:${port.registry} (management :${port.registryManagement}, java ${javaMajor(java)}, storage kafkasql)…`,
    cwd: dir,
    command: [
      java,
      '-Dtidemark.component=registry',
      `-Dtidemark.home=${localDir}`,
      '-Xmx512m',
      '-XX:+ExitOnOutOfMemoryError',
      `-Djava.io.tmpdir=${dir}`,
      '-Dquarkus.http.host=127.0.0.1',
      `-Dquarkus.http.port=${port.registry}`,
      '-Dquarkus.management.host=127.0.0.1',
      `-Dquarkus.management.port=${port.registryManagement}`,
      // kafkasql: schemas and their ids survive a registry restart
      '-Dapicurio.storage.kind=kafkasql',
      `-Dapicurio.kafkasql.bootstrap.servers=127.0.0.1:${port.kafka}`,
      // without a global rule GET /config answers NONE and the Confluent client refuses later versions
      '-Dapicurio.rules.global.compatibility=BACKWARD',
      // re-registering an equivalent schema returns the same id
      '-Dapicurio.ccompat.use-canonical-hash=true',
      `-Dapicurio.kafkasql.consumer.poll.timeout=${registryPollMs}`,
      '-jar',
      join(registryHome, 'quarkus-run.jar'),
    ],
  };
}

async function registryAnswers(): Promise<boolean> {
  if (!(await portOpen(port.registryManagement))) return false;
  if ((await httpStatus(`http://127.0.0.1:${port.registryManagement}/health/ready`)) !== 200) return false;
  return (await httpStatus(`http://127.0.0.1:${port.registry}/apis/ccompat/v7/subjects`)) === 200;
}

// ---------------------------------------------------------------------------------------------
// Java: Kafka runs on the default java (17+); the registry's classes need 21+

const javaVersions = new Map<string, string>();

/** The quoted version of `java -version` ("17.0.15"), or "" when it does not say. */
function javaVersion(java: string): string {
  if (!javaVersions.has(java)) {
    const run = spawnSync(java, ['-version'], { encoding: 'utf8' });
    javaVersions.set(java, /version "([^"]*)"/.exec(`${run.stderr ?? ''}${run.stdout ?? ''}`)?.[1] ?? '');
  }
  return javaVersions.get(java)!;
}

function javaMajor(java: string): number {
  const version = javaVersion(java).replace(/^1\./, ''); // "1.8.0_392" is Java 8
  return Number(/^\d+/.exec(version)?.[0] ?? 0);
}

/** The newest java of at least `minimum` (or the one `overrideVariable` names), or undefined. */
function findJava(minimum: number, overrideVariable: string): string | undefined {
  const override = process.env[overrideVariable];
  if (override) {
    const java = join(override, 'bin', 'java');
    if (!isExecutable(java)) fail(`${java} does not exist (from ${overrideVariable})`);
    if (javaMajor(java) < minimum) fail(`${java} is Java ${javaMajor(java)}; Java >= ${minimum} is needed`);
    return java;
  }
  const defaultJava = onPath('java');
  const javaHome = process.env.JAVA_HOME;
  const installed = ['/usr/lib/jvm', '/opt/java', '/opt'].flatMap((parent) =>
    readdirOrEmpty(parent)
      .sort()
      .map((dir) => join(parent, dir, 'bin', 'java')),
  );
  const seen = new Set<string>();
  let best: string | undefined;
  for (const java of [defaultJava, javaHome && join(javaHome, 'bin', 'java'), ...installed]) {
    // the same JVM under several names (symlinks) is asked for its version once
    if (!java || !isExecutable(java) || seen.has(fs.realpathSync(java))) continue;
    seen.add(fs.realpathSync(java));
    if (javaMajor(java) >= minimum && (!best || javaMajor(java) > javaMajor(best))) {
      best = java;
      // good enough for Kafka: no need to start every other JVM on the machine
      if (minimum < 21 && java === defaultJava) break;
    }
  }
  return best;
}

function findKafkaJava(): string {
  return (
    findJava(17, 'TIDEMARK_KAFKA_JAVA_HOME') ??
    fail(
      'no Java >= 17 found (java on PATH, $JAVA_HOME, /usr/lib/jvm/*); install one: apt-get install -y openjdk-17-jre-headless',
    )
  );
}

function findRegistryJava(): string {
  return (
    findJava(21, 'JAVA21_HOME') ??
    fail(
      `Apicurio Registry ${registryVersion} needs Java >= 21 and none was found (looked at java on PATH, $JAVA_HOME, /usr/lib/jvm/*/bin/java). Install a JDK 21+ and/or set JAVA21_HOME=/path/to/jdk`,
    )
  );
}

// ---------------------------------------------------------------------------------------------
// Fetching artifacts into the cache

function fetchMissingArtifacts(): void {
  const artifacts = components.flatMap((c) => (c.artifact ? [c.artifact] : []));
  if (artifacts.every((a) => a.isCached())) return;
  holdLock(join(cacheDir, '.fetch.lock'), `another fetch is filling ${cacheDir}; waiting for it…`, 900);
  // each fetch checks again: whoever held the lock may have filled the cache meanwhile
  for (const artifact of artifacts) artifact.fetch();
}

function runMaven(goalAndOptions: string[], failure: string): void {
  if (!onPath('mvn')) {
    fail(
      "Maven (mvn) is needed to fetch the stack's artifacts: apt-get install -y maven (or run scripts/bootstrap.sh)",
    );
  }
  const pom = join(infraDir, 'kafka', 'pom.xml');
  const maven = spawnSync(
    'mvn',
    ['-B', '-q', '-Dstyle.color=never', `-Dmaven.repo.local=${mavenRepo}`, '-f', pom, ...goalAndOptions],
    { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  if (maven.status !== 0) {
    const output = `${maven.stdout ?? ''}${maven.stderr ?? ''}`.trimEnd().split('\n');
    process.stderr.write(`${output.slice(-40).join('\n')}\n`);
    fail(failure);
  }
}

/** Fills a private scratch directory in the cache; whatever `fill` did not move away is removed. */
function withScratchDir(prefix: string, fill: (scratch: string) => void): void {
  const scratch = join(cacheDir, `${prefix}.tmp.${process.pid}`);
  fs.rmSync(scratch, { recursive: true, force: true });
  fs.mkdirSync(scratch, { recursive: true });
  try {
    fill(scratch);
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

function diskUsage(path: string): string {
  return spawnSync('du', ['-sh', path], { encoding: 'utf8' }).stdout?.split('\t')[0] ?? '?';
}

// ---------------------------------------------------------------------------------------------
// Processes: pid files, finding ours again, waiting for them

const pidFile = (c: Component): string => join(runDir, `${c.name}.pid`);
const logFile = (name: ComponentName): string => join(logDir, `${name}.log`);

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  // a zombie (exited, not yet reaped) is gone for our purposes; its state follows the ") " in stat
  const stat = readOrEmpty(`/proc/${pid}/stat`);
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
}

function cmdlineOf(pid: number): string {
  return readOrEmpty(`/proc/${pid}/cmdline`).replaceAll('\0', ' ');
}

function isOurLiveProcess(c: Component, pid: number): boolean {
  return Number.isInteger(pid) && pid > 0 && isAlive(pid) && c.isOurs(pid, cmdlineOf(pid));
}

/** Our live process for `c`, or undefined. Drops a stale pid file; rewrites a lost one. */
function findPid(c: Component, { quiet = false } = {}): number | undefined {
  if (fs.existsSync(pidFile(c))) {
    const recorded = readOrEmpty(pidFile(c)).replace(/\D/g, '');
    if (isOurLiveProcess(c, Number(recorded))) return Number(recorded);
    fs.rmSync(pidFile(c), { force: true });
    if (!quiet) warn(`removed stale pid file for ${c.name} (pid ${recorded || '?'} is gone)`);
  }
  for (const entry of fs.readdirSync('/proc')) {
    const pid = Number(entry);
    if (pid !== process.pid && isOurLiveProcess(c, pid)) {
      fs.mkdirSync(runDir, { recursive: true });
      fs.writeFileSync(pidFile(c), `${pid}\n`);
      return pid;
    }
  }
  return undefined;
}

/**
 * Starts `launch.command` so it outlives us: its own session, stdin /dev/null, output appended to the
 * component's log. (Descriptors our caller left open were closed by the wrapper, infra/stack.sh.)
 */
function startDetached(c: Component, launch: Launch): number {
  fs.rmSync(pidFile(c), { force: true });
  const log = fs.openSync(logFile(c.name), 'a');
  const [program = '', ...args] = launch.command;
  const child = spawn(program, args, { cwd: launch.cwd, detached: true, stdio: ['ignore', log, log] });
  fs.closeSync(log);
  child.on('error', () => {}); // a failed spawn shows as no pid, below
  child.unref();
  if (child.pid === undefined) fail(`${c.name} did not start (could not run ${program})`);
  fs.writeFileSync(pidFile(c), `${child.pid}\n`);
  return child.pid;
}

type Readiness = 'ready' | 'exited' | 'timed out';

async function waitUntilReady(c: Component, pid: number): Promise<Readiness> {
  const deadline = Date.now() + c.readyTimeoutS * 1000;
  for (;;) {
    if (!isAlive(pid)) return 'exited';
    if (await c.isReady()) return 'ready';
    if (Date.now() >= deadline) return 'timed out';
    await sleep(300);
  }
}

async function waitForExit(pid: number, timeoutS: number): Promise<boolean> {
  const deadline = Date.now() + timeoutS * 1000;
  while (isAlive(pid)) {
    if (Date.now() >= deadline) return false;
    await sleep(200);
  }
  return true;
}

function sendSignal(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

function residentMemory(pid: number): string {
  const kb = /^VmRSS:\s+(\d+)/m.exec(readOrEmpty(`/proc/${pid}/status`))?.[1];
  return kb ? `${Math.floor(Number(kb) / 1024)} MB` : '-';
}

// ---------------------------------------------------------------------------------------------
// Up and down, one component at a time

/**
 * True when our `c` is already up, so there is nothing to start. A live process that does not answer
 * yet (still starting, or still exiting after an interrupted down) is waited for rather than assumed
 * up: if it exits we start a new one; if it neither answers nor exits, we fail.
 */
async function alreadyUp(c: Component): Promise<boolean> {
  const pid = findPid(c);
  if (pid === undefined) return false;
  if (await c.isReady()) {
    say(`${c.name} already running (pid ${pid})`);
    return true;
  }
  say(`${c.name} (pid ${pid}) is running but not answering yet; waiting up to ${c.readyTimeoutS}s…`);
  switch (await waitUntilReady(c, pid)) {
    case 'ready':
      say(`${c.name} is ready (pid ${pid})`);
      return true;
    case 'exited':
      say(`that ${c.name} process exited; starting a new one`);
      fs.rmSync(pidFile(c), { force: true });
      return false;
    case 'timed out':
      showLogTail(logFile(c.name));
      fail(
        `${c.name} (pid ${pid}) is alive but did not answer within ${c.readyTimeoutS}s (stopped? hung?). Run 'bash infra/stack.sh down' and try again.`,
      );
  }
}

async function bringUp(c: Component): Promise<void> {
  if (await alreadyUp(c)) return;
  for (const p of c.ports) {
    if (await portOpen(p)) {
      fail(
        `cannot start ${c.name}: 127.0.0.1:${p} is already in use by ${portOwner(p)}, which is not this checkout's ${c.name}. Stop it, or pick other ports (TIDEMARK_*_PORT, see infra/README.md).`,
      );
    }
  }
  const started = performance.now();
  const log = logFile(c.name);
  // keep the previous start's log for a post-mortem
  if (fs.existsSync(log) && fs.statSync(log).size > 0) fs.renameSync(log, `${log}.1`);
  fs.writeFileSync(log, '');
  const launch = c.launch();
  say(launch.announce);
  const pid = startDetached(c, launch);
  const outcome = await waitUntilReady(c, pid);
  if (outcome === 'ready') {
    say(`${c.name} ready in ${secondsSince(started)}s`);
    return;
  }
  showLogTail(log);
  if (outcome === 'exited') {
    fs.rmSync(pidFile(c), { force: true });
    fail(`${c.name} exited during start-up (see the log above: ${log})`);
  }
  fail(
    `${c.name} (pid ${pid}) was not ready within ${c.readyTimeoutS}s (see ${log}); it is left running for inspection: 'bash infra/stack.sh down' stops it`,
  );
}

async function bringDown(c: Component): Promise<void> {
  const pid = findPid(c, { quiet: true });
  if (pid === undefined) {
    say(`${c.name} is not running`);
    fs.rmSync(pidFile(c), { force: true });
    return;
  }
  const started = performance.now();
  say(`stopping ${c.name} (pid ${pid})…`);
  // a SIGSTOPped process (fault tests pause them) would never act on SIGTERM
  sendSignal(pid, 'SIGCONT');
  (c.requestStop ?? ((p: number) => sendSignal(p, 'SIGTERM')))(pid);
  if (await waitForExit(pid, c.stopTimeoutS)) {
    say(`${c.name} stopped in ${secondsSince(started)}s`);
  } else {
    warn(`${c.name} (pid ${pid}) did not exit within ${c.stopTimeoutS}s of SIGTERM; sending SIGKILL`);
    sendSignal(pid, 'SIGKILL');
    if (!(await waitForExit(pid, 10))) fail(`${c.name} (pid ${pid}) survived SIGKILL`);
    say(`${c.name} killed`);
  }
  fs.rmSync(pidFile(c), { force: true });
}

// ---------------------------------------------------------------------------------------------
// Commands

async function upCommand(): Promise<void> {
  const started = performance.now();
  const portVariables: [string, string][] = [
    ['TIDEMARK_KAFKA_PORT', port.kafka],
    ['TIDEMARK_KAFKA_CONTROLLER_PORT', port.kafkaController],
    ['TIDEMARK_REGISTRY_PORT', port.registry],
    ['TIDEMARK_REGISTRY_MGMT_PORT', port.registryManagement],
    ['TIDEMARK_REDIS_PORT', port.redis],
  ];
  for (const [variable, value] of portVariables) {
    if (!isPortNumber(value)) fail(`${variable}=${value} is not a port number`);
  }
  if (proxiedListenerWanted) {
    if (!isPortNumber(port.kafkaProxy)) {
      fail(`TIDEMARK_KAFKA_PROXY_PORT=${port.kafkaProxy} is not a port number (or 'off')`);
    }
    if (!isPortNumber(port.kafkaProxied)) {
      fail(`TIDEMARK_KAFKA_PROXIED_PORT=${port.kafkaProxied} is not a port number`);
    }
  }
  lockThisCheckout();
  fetchMissingArtifacts();
  for (const c of components) await bringUp(c);
  const stackEnv = [
    `KAFKA_BROKERS=127.0.0.1:${port.kafka}`,
    `SCHEMA_REGISTRY_URL=http://127.0.0.1:${port.registry}/apis/ccompat/v7`,
    `REDIS_URL=redis://127.0.0.1:${port.redis}`,
  ].join('\n');
  // written whole or not at all: tests read it while another up may be running
  fs.writeFileSync(`${stackEnvFile}.tmp.${process.pid}`, `${stackEnv}\n`);
  fs.renameSync(`${stackEnvFile}.tmp.${process.pid}`, stackEnvFile);
  say('');
  await printStatusTable();
  say('');
  say(stackEnv);
  say(`stack up in ${secondsSince(started)}s`);
}

async function downCommand(args: string[]): Promise<void> {
  for (const arg of args) {
    if (arg !== '--purge' && arg !== '-p') fail(`down: unknown option ${arg} (only --purge)`);
  }
  const purge = args.length > 0;
  lockThisCheckout();
  const started = performance.now();
  fs.rmSync(stackEnvFile, { force: true });
  for (const c of [...components].reverse()) await bringDown(c);
  if (purge) {
    for (const dir of ['kafka', 'redis', 'registry', 'logs'])
      fs.rmSync(join(localDir, dir), { recursive: true, force: true });
    say(`purged ${localDir}/{kafka,redis,registry,logs}: the next up starts with empty data`);
  }
  say(`stack down in ${secondsSince(started)}s`);
}

async function printStatusTable(): Promise<void> {
  fs.mkdirSync(runDir, { recursive: true });
  const row = (...cells: string[]): void =>
    say(
      `${cells[0]!.padEnd(9)} ${cells[1]!.padEnd(8)} ${cells[2]!.padEnd(8)} ${cells[3]!.padEnd(52)} ${cells[4]}`,
    );
  row('COMPONENT', 'PID', 'RSS', 'ADDRESS', 'STATE');
  for (const c of components) {
    const pid = findPid(c, { quiet: true });
    if (pid !== undefined) {
      const state = (await c.isReady()) ? 'up' : 'starting/not answering';
      row(c.name, String(pid), residentMemory(pid), c.address, state);
      continue;
    }
    let state = 'down';
    for (const p of c.ports) {
      if (await portOpen(p)) {
        state = `down (port ${p} taken by ${portOwner(p).slice(0, 60)})`;
        break;
      }
    }
    row(c.name, '-', '-', c.address, state);
  }
}

async function statusCommand(): Promise<void> {
  await printStatusTable();
  if (fs.existsSync(stackEnvFile)) {
    say('');
    say(`${stackEnvFile}:`);
    for (const line of readOrEmpty(stackEnvFile).trimEnd().split('\n')) say(`  ${line}`);
  }
}

function logsCommand(args: string[]): void {
  let lines = '40';
  const chosen: Component[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '-n') {
      lines = args[++i] ?? fail('logs: -n needs a number');
      continue;
    }
    chosen.push(
      components.find((c) => c.name === arg) ??
        fail(`logs: unknown argument ${arg} (components: redis kafka registry; -n N)`),
    );
  }
  for (const c of chosen.length > 0 ? chosen : components) {
    say(`==> ${c.name} (${logFile(c.name)}) <==`);
    if (fs.existsSync(logFile(c.name)))
      spawnSync('tail', ['-n', lines, logFile(c.name)], { stdio: 'inherit' });
    else say('(no log yet)');
    say('');
  }
}

function fetchCommand(): void {
  const started = performance.now();
  if (components.every((c) => !c.artifact || c.artifact.isCached())) {
    say(
      `stack artifacts already cached in ${cacheDir} (kafka ${kafkaVersion}, apicurio registry ${registryVersion})`,
    );
  } else {
    fetchMissingArtifacts();
    say(`stack artifacts cached in ${cacheDir} in ${secondsSince(started)}s`);
  }
  // checked here too, so that a bootstrap fails early rather than at the first `up`
  const kafkaJava = findKafkaJava();
  const registryJava = findRegistryJava();
  say(
    `java for kafka: ${kafkaJava} (java ${javaMajor(kafkaJava)}); for the registry: ${registryJava} (java ${javaMajor(registryJava)})`,
  );
}

function topicsCommand(args: string[]): number {
  if (!kafkaJarsCached()) fail('kafka jars not cached yet: bash infra/stack.sh fetch');
  const tool = run(
    [
      ...kafkaJavaCommand('kafka-tool', ['-Xmx256m'], 'log4j2-tools.properties'),
      ...['org.apache.kafka.tools.TopicCommand', '--bootstrap-server', `127.0.0.1:${port.kafka}`, ...args],
    ],
    { stdio: 'inherit' },
  );
  return tool.status ?? 1;
}

function usage(): string {
  return `usage: bash infra/stack.sh <command>

  up              start Redis, Kafka ${kafkaVersion} (KRaft) and Apicurio Registry ${registryVersion},
                  wait until each is ready, write .local/stack.env; does nothing if already up
  down [--purge]  stop registry, then Kafka, then Redis (keeps data; --purge deletes it)
  reset           same as: down --purge
  status          table of components, pids, addresses and states (always exits 0)
  logs [comp] [-n N]  tail of each log (.local/logs/*.log), default 40 lines
  fetch           download the Kafka jars and the registry into the cache, start nothing
  topics ARGS     kafka-topics against the local broker, e.g. topics --list

ports (env):  TIDEMARK_KAFKA_PORT=${port.kafka}  TIDEMARK_KAFKA_CONTROLLER_PORT=${port.kafkaController}
              TIDEMARK_REGISTRY_PORT=${port.registry}  TIDEMARK_REGISTRY_MGMT_PORT=${port.registryManagement}
              TIDEMARK_REDIS_PORT=${port.redis}
              TIDEMARK_KAFKA_PROXIED_PORT=${port.kafkaProxied}  TIDEMARK_KAFKA_PROXY_PORT=${port.kafkaProxy} (or off)
cache:        TIDEMARK_CACHE=${cacheDir}
java:         Kafka: java >= 17 (default java); registry: java >= 21 (JAVA21_HOME, or found in /usr/lib/jvm)
data/logs:    ${localDir}
`;
}

type Command = (args: string[]) => Promise<number | void> | number | void;

const commands: Record<string, Command> = {
  up: upCommand,
  down: downCommand,
  reset: () => downCommand(['--purge']),
  status: statusCommand,
  logs: logsCommand,
  fetch: fetchCommand,
  topics: topicsCommand,
  help: () => void process.stdout.write(usage()),
  '-h': () => void process.stdout.write(usage()),
  '--help': () => void process.stdout.write(usage()),
};

/** Exit codes: 0 done, 1 failed (a "stack: error:" line says why), 2 usage error; topics: the tool's. */
async function main([name = '', ...args]: string[]): Promise<number> {
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (command) return (await command(args)) ?? 0;
  if (name) warn(`unknown command: ${name}`);
  process.stderr.write(usage());
  return 2;
}

// ---------------------------------------------------------------------------------------------
// Small helpers

class StackError extends Error {}

/** Stops the command with "stack: error: <message>" and exit code 1 (scratch directories are cleaned). */
function fail(message: string): never {
  throw new StackError(message);
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

function warn(line: string): void {
  process.stderr.write(`stack: ${line}\n`);
}

function secondsSince(started: number): string {
  return ((performance.now() - started) / 1000).toFixed(1);
}

/** What `read` returns, or `fallback` when it throws (a file or process that is not there). */
function orElse<T>(read: () => T, fallback: T): T {
  try {
    return read();
  } catch {
    return fallback;
  }
}

const readOrEmpty = (path: string): string => orElse(() => fs.readFileSync(path, 'utf8'), '');
const readdirOrEmpty = (path: string): string[] => orElse(() => fs.readdirSync(path), []);

/** Runs `command` (program and arguments) to completion. */
function run(command: string[], options: SpawnSyncOptions): SpawnSyncReturns<string | Buffer> {
  const [program = '', ...args] = command;
  return spawnSync(program, args, options);
}

function isExecutable(path: string): boolean {
  try {
    fs.accessSync(path, fs.constants.X_OK);
    return fs.statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Like `command -v`: the program's path on PATH, or undefined. */
function onPath(program: string): string | undefined {
  return (process.env.PATH ?? '')
    .split(':')
    .map((dir) => join(dir || '.', program))
    .find(isExecutable);
}

function isPortNumber(value: string): boolean {
  return /^\d+$/.test(value) && Number(value) >= 1 && Number(value) <= 65535;
}

function portOpen(p: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port: Number(p) });
    const finish = (open: boolean): void => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(1000, () => finish(false));
    socket.on('connect', () => finish(true));
    socket.on('error', () => finish(false));
  });
}

/** "pid 123: java …" for whoever listens on the port, for an error a person can act on. */
function portOwner(p: string): string {
  const listening = spawnSync('ss', ['-Hltnp', `sport = :${p}`], { encoding: 'utf8' }).stdout ?? '';
  const pid = /pid=(\d+)/.exec(listening.split('\n')[0] ?? '')?.[1];
  return pid ? `pid ${pid}: ${cmdlineOf(Number(pid)).trimEnd().slice(0, 160)}` : 'an unknown process';
}

/** The HTTP status of a GET, or 0 when there is no answer within 3 s. */
function httpStatus(url: string): Promise<number> {
  return new Promise((resolve) => {
    const get = request(url, { agent: false, timeout: 3000 }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    get.on('timeout', () => get.destroy());
    get.on('error', () => resolve(0));
    get.end();
  });
}

/**
 * Holds an flock(1) lock on `file` until this process exits. The lock belongs to the open file
 * description, so `flock` run on our descriptor takes it for us; the shell version's locks are the
 * same files, so old and new scripts exclude each other.
 */
function holdLock(file: string, waitingMessage: string, timeoutS: number): void {
  fs.mkdirSync(dirname(file), { recursive: true });
  const fd = fs.openSync(file, 'w');
  const flock = (...options: string[]): boolean => {
    const run = spawnSync('flock', [...options, '3'], { stdio: ['ignore', 'ignore', 'inherit', fd] });
    if (run.error) fail(`flock (util-linux) is needed to run one stack.sh at a time: ${run.error.message}`);
    return run.status === 0;
  };
  if (flock('-n')) return;
  say(waitingMessage);
  if (!flock('-w', String(timeoutS))) fail(`timed out waiting for ${file}`);
}

/** One up or down at a time per checkout. */
function lockThisCheckout(): void {
  fs.mkdirSync(logDir, { recursive: true });
  holdLock(join(runDir, '.stack.lock'), 'another stack.sh is running in this checkout; waiting for it…', 600);
}

function showLogTail(log: string, lines = 40): void {
  if (!fs.existsSync(log) || fs.statSync(log).size === 0) {
    process.stderr.write(`(${log} is empty or missing)\n`);
    return;
  }
  const tail = spawnSync('tail', ['-n', String(lines), log], { encoding: 'utf8' }).stdout ?? '';
  const quoted = tail
    .trimEnd()
    .split('\n')
    .map((line) => `  | ${line}`);
  process.stderr.write(`--- last ${lines} lines of ${log} ---\n${quoted.join('\n')}\n---\n`);
}

// A closed pipe (`status | head -1`) ends the output quietly, as it would for a shell script.
process.stdout.on('error', () => process.exit(0));

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof StackError) process.stderr.write(`stack: error: ${error.message}\n`);
    else console.error(error);
    process.exit(1);
  },
);
