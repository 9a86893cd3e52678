import { describe, expect, it } from 'vitest';
import { bench, expectPositive, expectSucceeded, stackEnv } from '../../../bench/run-bench.js';

// A smoke run of services/materializer/bench/service.ts on the real stack, so the benchmark cannot rot.
// It asserts the rates and ratios are printed with positive figures, never what they are: they measure a
// shared machine, not the code.
//
// 30,000 turns is about the least this bench measures: it times the materializer from the first
// watermark it sees move, and one fetch holds about 3,500 turns of a partition, so a smaller run is
// mostly applied by then (at 8,000 turns every turn was, in one poll: a rate of billions of turns/s and
// no apply time observed yet).

const knobs = { BENCH_TURNS: '30000', BENCH_SESSIONS: '40' };

describe('services/materializer/bench/service.ts on the real stack', () => {
  it('prints the bare and end-to-end rates and the ratios, and the command', async () => {
    const result = await bench(
      'services/materializer/bench/service.ts',
      [],
      { ...stackEnv(), ...knobs },
      90_000,
    );
    expectSucceeded(result);
    const { stdout } = result;
    expect(stdout).toContain('materializer service benchmark — 30000 turns, 40 sessions');
    expectPositive(stdout, 'bare kafkajs consume');
    expectPositive(stdout, 'materializer (end to end)');
    expectPositive(stdout, 'ratio materializer / bare');
    expectPositive(stdout, 'apply time / wall time');
    expect(stdout).toContain(
      'command: BENCH_TURNS=30000 BENCH_SESSIONS=40 pnpm exec tsx services/materializer/bench/service.ts',
    );
  }, 100_000);
});
