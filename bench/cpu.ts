import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// CPU time of a benchmark leg, summed over every process doing its work: this process, the services'
// processes (with --processes), and the local stack's broker and Redis (their pid files, as
// infra/stack.sh writes them; a stack the environment names elsewhere is not counted, and the figure
// says so). Read from /proc, so Linux only.

const ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** User + system CPU seconds a process has used, or null if it is gone (or not on Linux). */
function processSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command (which may hold spaces), ")" then: state, ppid, …; utime and stime are
    // the 14th and 15th fields of the whole line.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
  } catch {
    return null;
  }
}

/** The local stack's broker and Redis, if this checkout runs them. */
export function stackPids(): { readonly kafka: number | null; readonly redis: number | null } {
  const read = (name: string) => {
    const file = fileURLToPath(new URL(`../.local/run/${name}.pid`, import.meta.url));
    if (!existsSync(file)) return null;
    const pid = Number(readFileSync(file, 'utf8').trim());
    return Number.isSafeInteger(pid) && processSeconds(pid) !== null ? pid : null;
  };
  return { kafka: read('kafka'), redis: read('redis') };
}

/** CPU seconds per process group over a leg: `start`, then `stop` for the figures. */
export interface CpuReading {
  readonly bench: number;
  readonly services: number;
  readonly kafka: number | null;
  readonly redis: number | null;
  readonly total: number;
}

export function cpuMeter(services: () => readonly number[] = () => []) {
  const stack = stackPids();
  const servicesNow = () => services().reduce((sum, pid) => sum + (processSeconds(pid) ?? 0), 0);
  const of = (pid: number | null) => (pid === null ? null : processSeconds(pid));
  const benchNow = () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1e6;
  };
  const before = {
    bench: benchNow(),
    services: servicesNow(),
    kafka: of(stack.kafka),
    redis: of(stack.redis),
  };
  return {
    stop(): CpuReading {
      const kafka = of(stack.kafka);
      const redis = of(stack.redis);
      const reading = {
        bench: benchNow() - before.bench,
        services: servicesNow() - before.services,
        kafka: kafka === null || before.kafka === null ? null : kafka - before.kafka,
        redis: redis === null || before.redis === null ? null : redis - before.redis,
      };
      return {
        ...reading,
        total: reading.bench + reading.services + (reading.kafka ?? 0) + (reading.redis ?? 0),
      };
    },
  };
}

/** "µs per record (bench a, services b, kafka c, redis d)". */
export function describeCpu(reading: CpuReading, records: number): string {
  const us = (seconds: number | null) => (seconds === null ? 'n/a' : ((seconds * 1e6) / records).toFixed(1));
  return `${us(reading.total)} µs CPU per turn (this process ${us(reading.bench)}, services ${us(reading.services)}, kafka ${us(reading.kafka)}, redis ${us(reading.redis)})`;
}
