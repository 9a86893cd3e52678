import { describe, expect, it } from 'vitest';
import { bench, expectPositive, expectSucceeded, figures, stackEnv } from '../../../bench/run-bench.js';

// A smoke run of services/validator/bench/validator.bench.ts on the real stack, so the benchmark cannot
// rot: 4 sessions of 160 turns (20 compactions, L1 and digests) offered at the default rate, and 20
// checks after 100 and after 400 prior turns. It asserts the latency and check rows are printed with
// positive figures, never what they are: they measure a shared machine, not the code. The decision
// latencies come from millisecond record timestamps and may read 0; a ratio may round to 0.

const args = ['--sessions', '4', '--turns', '160', '--long', '400', '--checks', '20'];

describe('services/validator/bench/validator.bench.ts on the real stack', () => {
  it('prints the decision latencies of the echo and the validator, the check costs, and the command', async () => {
    const result = await bench('services/validator/bench/validator.bench.ts', args, stackEnv(), 90_000);
    expectSucceeded(result);
    const { stdout } = result;
    expectPositive(stdout, '1. decision latency:');
    // `<n> compactions offered at <rate>/s over <s> s, <n> decisions measured`
    expectPositive(stdout, 'echo:');
    expectPositive(stdout, 'validator:');
    expectPositive(stdout, 'echo (bus floor)', { atLeast: 0 });
    expectPositive(stdout, 'validator'.padEnd(28), { atLeast: 0 });
    // Two ratios, whatever they read: an echo p50 of 0 ms makes the first infinite.
    expect(figures(stdout, 'ratio validator/echo:')).toHaveLength(2);
    expectPositive(stdout, 'validator batches (decideBatch):');
    const [observed, mean] = figures(stdout, 'validator latency metric:');
    expect(observed).toBeGreaterThan(0);
    expect(mean).toBeGreaterThanOrEqual(0);
    for (const part of ['decide', 'stateAt', 'load']) {
      expectPositive(stdout, `${part}, 100 prior turns`);
      expectPositive(stdout, `${part}, 400 prior turns`);
      expectPositive(stdout, `ratio 400/100 (${part}):`, { atLeast: 0 });
    }
    expect(stdout).toContain(
      `command: pnpm exec tsx services/validator/bench/validator.bench.ts ${args.join(' ')}`,
    );
  }, 100_000);
});
