import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

// CPU per leg, summed over every process that does the leg's work: the bench's own node process, the
// node processes it spawned, the Kafka broker (java) and redis-server. Each is read from
// /proc/<pid>/stat (utime + stime, in clock ticks of `getconf CLK_TCK`) just before a leg's first send
// and just after its last record was handled, so a process's start-up and shutdown are not counted.
// The broker and Redis are found by the port they listen on (/proc/net/tcp → socket inode →
// /proc/<pid>/fd), so a stale pid file or another stack on other ports cannot mislead it.

export interface Watched {
  /** The name a leg's breakdown shows: `bench`, `kafka`, `redis`, or a spawned process's role. */
  readonly name: string;
  readonly pid: number;
}

const clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** utime + stime of a live process, in clock ticks; undefined once it is gone. */
function cpuTicks(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // Fields after the command name (which may hold spaces and parentheses): state is field 3, utime 14.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** The pid of the process listening on 127.0.0.1/0.0.0.0/::1/:: `port`, or undefined. */
function listenerPid(port: number): number | undefined {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let rows: string[];
    try {
      rows = readFileSync(table, 'utf8').trim().split('\n').slice(1);
    } catch {
      continue;
    }
    for (const row of rows) {
      const cols = row.trim().split(/\s+/);
      const local = cols[1] ?? '';
      // st 0A is LISTEN; the port is the hex after the colon.
      if (cols[3] === '0A' && parseInt(local.slice(local.indexOf(':') + 1), 16) === port) {
        inodes.add(`socket:[${cols[9]}]`);
      }
    }
  }
  if (inodes.size === 0) return undefined;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (inodes.has(readlinkSync(`/proc/${entry}/fd/${fd}`))) return Number(entry);
      } catch {
        // closed while we looked
      }
    }
  }
  return undefined;
}

const portOf = (address: string) => Number(/:(\d+)\/?$/.exec(address)?.[1]);

/**
 * The Kafka broker(s) and redis-server of the stack the config names, found by their listening ports,
 * and a note for each that is not a process of this machine (a container, another host): its CPU cannot
 * be counted, and the bench prints the note beside figures that leave it out.
 */
export function stackProcesses(config: { KAFKA_BROKERS: readonly string[]; REDIS_URL: string }): {
  watched: Watched[];
  uncounted: string[];
} {
  const wanted = [
    ...config.KAFKA_BROKERS.map((broker) => ({ name: 'kafka', port: portOf(broker) })),
    { name: 'redis', port: Number(new URL(config.REDIS_URL).port || 6379) },
  ];
  const found = new Map<number, Watched>();
  const uncounted: string[] = [];
  for (const { name, port } of wanted) {
    const pid = listenerPid(port);
    if (pid === undefined) {
      uncounted.push(`${name}'s CPU is not counted: no process of this machine listens on port ${port}`);
    } else {
      found.set(pid, { name, pid });
    }
  }
  return { watched: [...found.values()], uncounted };
}

/** CPU seconds so far of each watched process (a gone process counts as absent). */
export type CpuSample = ReadonlyMap<string, number>;

export function sampleCpu(watched: readonly Watched[]): CpuSample {
  const sample = new Map<string, number>();
  for (const { name, pid } of watched) {
    const ticks = cpuTicks(pid);
    if (ticks !== undefined) sample.set(name, (sample.get(name) ?? 0) + ticks / clockTicks);
  }
  return sample;
}

/** µs of CPU per turn between two samples, per process name. */
export function microsPerTurn(before: CpuSample, after: CpuSample, turns: number): Map<string, number> {
  const per = new Map<string, number>();
  for (const [name, seconds] of after) {
    per.set(name, ((seconds - (before.get(name) ?? seconds)) * 1e6) / turns);
  }
  return per;
}
