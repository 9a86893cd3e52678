import { describe, expect, it } from 'vitest';
import { bench, expectPositive, expectSucceeded, stackEnv } from '../../../bench/run-bench.js';

// A smoke run of services/compactor/bench/replay.ts on the real stack, so the benchmark cannot rot: 20
// sessions of 160 turns (four L1 compactions and one digest each). It asserts the three rates and the
// ratios are printed with positive figures, never what they are: they measure a shared machine. A ratio
// is printed to two places and may round to 0 when the replay is slow beside a fast raw read.

describe('services/compactor/bench/replay.ts on the real stack', () => {
  it('prints the raw, decoded and replay rates and the ratios, and the command', async () => {
    const args = ['20', '160'];
    const result = await bench('services/compactor/bench/replay.ts', args, stackEnv(), 90_000);
    expectSucceeded(result);
    const { stdout } = result;
    expect(stdout).toContain('replay throughput, 3,200 turns (20 sessions × 160)');
    expectPositive(stdout, 'raw consume (kafkajs, no decoding)');
    expectPositive(stdout, 'decoded consume (Bus)');
    expectPositive(stdout, 'replay (default policy)');
    expectPositive(stdout, 'replay / raw consume', { atLeast: 0 });
    expectPositive(stdout, 'replay / decoded consume', { atLeast: 0 });
    expect(stdout).toContain(`command: pnpm exec tsx services/compactor/bench/replay.ts ${args.join(' ')}`);
  }, 100_000);
});
