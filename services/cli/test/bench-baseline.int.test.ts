import { describe, expect, it } from 'vitest';
import { bench, expectSucceeded, stackEnv } from '../../../bench/run-bench.js';

// A smoke run of `pnpm bench:baseline` on the real stack, so the benchmark cannot rot: a very small
// workload, one round, every leg (the passthrough, and the same shape with pipelines and with Lua, in
// one process and one process per group). It asserts the table is printed with positive figures (Redis
// commands per turn too), never what the figures are: they measure a shared machine, not the code.

const legs = [
  'bare kafkajs passthrough',
  'same shape, one pipeline per batch, one process',
  'same shape, one Lua call per batch, one process',
  'same shape, one pipeline per batch, one process per group',
  'same shape, one Lua call per batch, one process per group',
];

describe('bench/baseline.ts on the real stack', () => {
  it('prints every leg with positive turns/s and CPU per turn, and the command', async () => {
    // 160 turns per session: four L1 compactions and one digest each, so every kind of record is made.
    const args = ['--sessions', '20', '--turns', '160', '--rounds', '1'];
    const result = await bench('bench/baseline.ts', args, stackEnv(), 170_000);
    expectSucceeded(result);
    const rows = result.stdout.split('\n');
    for (const leg of legs) {
      const row = rows.find((line) => line.trim().startsWith(`${leg} `) && line.includes('|'));
      expect(row, `${leg} in\n${result.stdout}`).toBeDefined();
      const [, rate, cpu] = row!
        .split('|')
        .map((cell) => Number(cell.trim().split(' ')[0]!.replace('×', '')));
      expect(rate, row).toBeGreaterThan(0);
      expect(cpu, row).toBeGreaterThan(0);
      // The same shape's Redis commands per turn (the server's counters; the passthrough uses none).
      const commands = Number(row!.split('|').at(-1)!.trim());
      if (leg.startsWith('same shape')) expect(commands, row).toBeGreaterThan(0);
    }
    // The spawned groups' CPU is counted beside the bench's own.
    expect(result.stdout).toMatch(/one process per group: bench [\d.]+, .*materializer [\d.]+/);
    expect(result.stdout).toContain(`command: pnpm exec tsx bench/baseline.ts ${args.join(' ')}`);
  }, 180_000);
});
