import { describe, expect, it } from 'vitest';
import { bench, expectPositive, expectSucceeded, stackEnv } from '../../../bench/run-bench.js';

// A smoke of `pnpm bench` (bench/all.ts) on the real stack: two of its steps (the compactor's memory and
// resume latency, the quick ones; every step's benchmark has a smoke of its own), at smoke sizes. It
// asserts each step's report is printed under its heading and that the targets table is filled from the
// figures those benchmarks recorded (positive numbers), the steps not run left as –; never what the
// figures are.

describe('pnpm bench (bench/all.ts)', () => {
  it(
    'runs the chosen steps and fills the targets table from their figures',
    { timeout: 150_000 },
    async () => {
      const result = await bench('bench/all.ts', ['--smoke', '--only', '7,9'], stackEnv(), 140_000);
      expectSucceeded(result);
      const { stdout } = result;
      expect(stdout).toContain('## compactor memory at 10,000 open sessions');
      expect(stdout).toContain('## resume latency');
      expect(stdout).not.toContain('## replay');
      expect(stdout).toContain('# Targets (issue 25), SMOKE SIZES');
      expectPositive(stdout, '| compactor RSS peak at 200 open sessions');
      expectPositive(stdout, '| resume latency, digest mode, p99 (library, cold)');
      expect(stdout).toMatch(/\| replay ÷ raw L0 consume\s+\| –/);
      expect(stdout).toContain('command: pnpm bench --smoke --only 7,9');
    },
  );

  it('refuses a step it does not have, in one line, exit 2', async () => {
    const result = await bench('bench/all.ts', ['--only', '12'], {}, 30_000);
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe('bench/all.ts: --only: there are 10 steps (--help lists the options)');
  });
});
