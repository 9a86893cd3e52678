import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { endpoints } from './infra/index.js';

// The pipeline benchmark, run small against the real stack so that it cannot rot: it must finish,
// print every leg (passthrough, the same shape, Tidemark) with its CPU per turn, and agree with the
// core reference. No figure is judged here: benchmarks measure, tests do not time.

const root = fileURLToPath(new URL('..', import.meta.url));

function runBench(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const { kafkaBrokers, schemaRegistryUrl, redisUrl } = endpoints();
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/pipeline.ts', ...args], {
    cwd: root,
    env: {
      ...process.env,
      KAFKA_BROKERS: kafkaBrokers.join(','),
      SCHEMA_REGISTRY_URL: schemaRegistryUrl,
      REDIS_URL: redisUrl,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

describe('bench/pipeline.ts, smoke', () => {
  it('runs every leg on a small workload and prints its throughput and CPU per turn', async () => {
    const run = await runBench(['--sessions', '4', '--turns', '80', '--partitions', '2']);
    expect(run.code, run.stderr.slice(-2_000)).toBe(0);
    const line = (label: string) => run.stdout.split('\n').find((l) => l.includes(label)) ?? '';
    expect(line('same shape (')).toMatch(/: \d+ turns\/s$/);
    for (const leg of ['CPU, passthrough:', 'CPU, same shape:', 'CPU, tidemark:']) {
      const perTurn = Number(/(\d+(?:\.\d+)?) µs CPU per turn/.exec(line(leg))?.[1]);
      expect(perTurn, `${leg} in\n${run.stdout}`).toBeGreaterThan(0);
    }
    expect(line('tidemark ÷ same shape')).toMatch(/CPU per turn \d+\.\d+×/);
    expect(line('differ from the core reference')).toMatch(/: 0$/);
  }, 300_000);
});
