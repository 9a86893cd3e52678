import { describe, expect, it } from 'vitest';
import { bench, expectPositive, expectSucceeded, figures, stackEnv } from '../../../bench/run-bench.js';

// A smoke run of services/resume/bench/resume.ts on the real stack, so the benchmark cannot rot: its
// two sessions (a 200-turn digest, a 1,000-turn raw span), 50 digest and 5 raw resumes of each kind. It
// asserts every latency row is printed with positive p50 and p99, never what they are: they measure a
// shared machine, not the code. The "× of baseline" ratios are printed to one place: a warm resume may
// read ×0.0 of a cold baseline.

const knobs = { BENCH_DIGEST_RUNS: '50', BENCH_RAW_RUNS: '5' };
const rows = [
  'baseline: bare Redis GET round trip (n=50)',
  'digest, library, cold: node + 40 raw turns (n=50)',
  'digest, HTTP, cold (n=50)',
  'digest, library, warm context cache (n=50)',
  'raw, library, cold: 1,000-turn span (n=5)',
  'raw, HTTP, cold: 1,000-turn span (n=5)',
  'raw, library, warm context cache (n=5)',
];

describe('services/resume/bench/resume.ts on the real stack', () => {
  it('prints every latency row with positive p50 and p99, and the command', async () => {
    const result = await bench('services/resume/bench/resume.ts', [], { ...stackEnv(), ...knobs }, 90_000);
    expectSucceeded(result);
    const { stdout } = result;
    for (const row of rows) {
      const [p50, p99, ...ratios] = figures(stdout, row);
      expect(p50, row).toBeGreaterThan(0);
      expect(p99, row).toBeGreaterThan(0);
      for (const ratio of ratios) expect(ratio, row).toBeGreaterThanOrEqual(0);
    }
    // Its label names the span's offsets: the span, the count, p50 and p99.
    expectPositive(stdout, 'baseline: bare fetches of');
    expect(stdout).toContain(
      'command: pnpm exec tsx services/resume/bench/resume.ts   (BENCH_DIGEST_RUNS=50 BENCH_RAW_RUNS=5)',
    );
  }, 100_000);
});
