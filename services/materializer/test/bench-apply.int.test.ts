import { describe, expect, it } from 'vitest';
import { bench, expectPositive, expectSucceeded, stackEnv } from '../../../bench/run-bench.js';

// A smoke run of services/materializer/bench/apply.ts on the real Redis, so the benchmark cannot rot:
// 2,000 turns of 10 sessions in batches of 100, one round, a "long" history of 2,000 turns. It asserts the
// rates, round trips and stateAt latencies are printed with positive figures, never what they are: they
// measure a shared machine, not the code.

const knobs = {
  BENCH_TURNS: '2000',
  BENCH_BATCH: '100',
  BENCH_SESSIONS: '10',
  BENCH_ROUNDS: '1',
  BENCH_LONG_HISTORY: '2000',
};

describe('services/materializer/bench/apply.ts on the real stack', () => {
  it('prints the apply rates, round trips per batch and stateAt latencies, and the command', async () => {
    const result = await bench(
      'services/materializer/bench/apply.ts',
      [],
      { ...stackEnv(), ...knobs },
      90_000,
    );
    expectSucceeded(result);
    const { stdout } = result;
    expect(stdout).toContain('materializer apply benchmark — 2000 turns, 10 sessions, batches of 100');
    expectPositive(stdout, 'projection.applyBatchInEpoch');
    expectPositive(stdout, 'baseline pipeline of SETs');
    expectPositive(stdout, 'ratio projection / baseline');
    expectPositive(stdout, 'round trips per batch');
    expectPositive(stdout, 'history 100 turns');
    expectPositive(stdout, 'history 2000 turns');
    expectPositive(stdout, 'ratio long / short');
    const assignments = Object.entries(knobs).map(([name, value]) => `${name}=${value}`);
    expect(stdout).toContain(
      `command: ${assignments.join(' ')} pnpm exec tsx services/materializer/bench/apply.ts`,
    );
  }, 100_000);
});
