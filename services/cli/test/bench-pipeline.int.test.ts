import { describe, expect, it } from 'vitest';
import { bench, expectPositive, expectSucceeded, figures, stackEnv } from '../../../bench/run-bench.js';

// A smoke run of `pnpm bench:pipeline` on the real stack, so the benchmark cannot rot: a very small
// workload (160 turns per session: four L1 compactions and one digest each, so every kind of record and
// decision is made), one round, in each process mode. It asserts the table and Tidemark's round lines
// are printed with positive figures, never what the figures are: they measure a shared machine, not the
// code. That every session's trusted markers equal the core reference's is asserted: it is a check, not
// a measurement.

const modes = [
  {
    mode: 'one process',
    flags: [],
    legs: [
      'same shape, one pipeline per batch, one process',
      'same shape, one Lua call per batch, one process',
    ],
    tidemark: 'Tidemark, one process',
  },
  {
    mode: 'one process per service (--processes)',
    flags: ['--processes'],
    legs: [
      'same shape, one pipeline per batch, one process per group',
      'same shape, one Lua call per batch, one process per group',
    ],
    tidemark: 'Tidemark, one process per service',
  },
];

describe('bench/pipeline.ts on the real stack', () => {
  it.each(modes)(
    '$mode: prints every leg with positive figures, the round lines, and the command',
    async ({ flags, legs, tidemark }) => {
      const args = ['--sessions', '10', '--turns', '160', '--rounds', '1', ...flags];
      const result = await bench('bench/pipeline.ts', args, stackEnv(), 110_000);
      expectSucceeded(result);
      const { stdout } = result;
      // A table row: the leg's name, then its cells; a figure that is not a finite number prints as –,
      // so the count of figures says none is missing. The passthrough: turns/s, CPU and the two ratios
      // to itself (no Redis); a shape adds Redis commands per turn; Tidemark adds its two ratios to each
      // shape.
      const row = (leg: string, count: number) => {
        expectPositive(stdout, `${leg} `);
        expect(figures(stdout, `${leg} `), leg).toHaveLength(count);
      };
      row('bare kafkajs passthrough', 4);
      for (const leg of legs) row(leg, 5);
      row(tidemark, 9);
      expectPositive(stdout, 'whole pipeline:');
      expectPositive(stdout, 'Redis commands per turn:');
      // Record timestamps have millisecond resolution: a latency may read 0; the count may not.
      expectPositive(stdout, 'validation latency', { atLeast: 0 });
      expect(
        figures(stdout, 'validation latency (compaction record → first decision record, n=')[0],
      ).toBeGreaterThan(0);
      // Where the validation latency goes, from the validators' own metrics: batches and compactions per
      // batch positive; each phase's mean may read 0.0 on a fast path, but all four are printed.
      expectPositive(stdout, 'validator batches:', { atLeast: 0 });
      expect(figures(stdout, 'validator batches:')[0]).toBeGreaterThan(0);
      expect(stdout).toMatch(/mean ms per batch: queued [\d.]+, load [\d.]+, decide [\d.]+, commit [\d.]+;/);
      expectPositive(stdout, 'last decision appended');
      expectPositive(stdout, 'stages caught up (s after the first publish):');
      expect(figures(stdout, 'sessions whose trusted markers differ from the core reference:')).toEqual([0]);
      // The logic alone, in memory: over the very sessions the observers hold the reference of (the same
      // counts of compactions and decisions), a positive cost, and a floor above the shape itself.
      const logic = 'the same logic in memory, no I/O (';
      expectPositive(stdout, logic);
      const [passes, compactions, decisions, micros, ...floors] = figures(stdout, logic);
      const reference = figures(stdout, 'last decision appended').slice(1, 3);
      expect([passes, compactions, decisions]).toEqual([3, ...reference]);
      expect(micros).toBeGreaterThan(0);
      expect(floors).toHaveLength(2);
      for (const floor of floors) expect(floor).toBeGreaterThan(1);
      expect(stdout).toContain(`command: pnpm exec tsx bench/pipeline.ts ${args.join(' ')}`);
    },
    120_000,
  );
});
