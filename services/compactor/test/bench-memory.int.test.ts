import { describe, expect, it } from 'vitest';
import { bench, expectPositive, expectSucceeded, figures, stackEnv } from '../../../bench/run-bench.js';

// A smoke run of services/compactor/bench/memory.ts on the real stack, as its header runs it (node
// --expose-gc), so the benchmark cannot rot: 200 sessions of 10 turns, every window open. It asserts the
// memory lines are printed with positive figures, never what they are: they measure a shared machine.
// The growth per open session is not asserted positive: on so few sessions a collection can make it
// negative. It runs in ~10 s; the kill is far off because beside other files the shared registry has gone
// silent for up to a minute (see vitest.config.ts), and a failure shows both streams (the bench reports
// its progress on stderr).

describe('services/compactor/bench/memory.ts on the real stack', () => {
  it('prints the rate, the open windows, RSS and heap with positive figures, and the command', async () => {
    const args = ['200', '10'];
    const result = await bench('services/compactor/bench/memory.ts', args, stackEnv(), 150_000, {
      node: ['--expose-gc'],
    });
    expectSucceeded(result);
    const { stdout } = result;
    expect(stdout).toContain('compactor memory: 200 concurrent sessions x 10 turns (2000 turns)');
    expectPositive(stdout, 'produced and consumed in');
    expectPositive(stdout, 'open windows (gauge):');
    expectPositive(stdout, 'RSS baseline (compactor started, no turn read):');
    expectPositive(stdout, 'RSS after every turn read (after GC):');
    expectPositive(stdout, 'RSS peak while reading:');
    const [heapBefore, heapAfter] = figures(stdout, 'V8 heap used:');
    expect(heapBefore).toBeGreaterThan(0);
    expect(heapAfter).toBeGreaterThan(0);
    expectPositive(stdout, "the open windows' turns as JSON");
    expect(figures(stdout, 'Redis used_memory growth (the windows live there):')).toHaveLength(1);
    expect(stdout).toContain(
      `command: node --expose-gc --import tsx services/compactor/bench/memory.ts ${args.join(' ')}`,
    );
  }, 160_000);
});
