import { describe, expect, it } from 'vitest';
import { bench, expectSucceeded } from '../../../bench/run-bench.js';

// `pnpm bench:pipeline` (bench/pipeline.ts), `pnpm bench:baseline` (bench/baseline.ts) and the
// validator's bench read their options before they touch the stack: --help lists them, and an option
// they do not know is one clear line, not a stack trace. None of these runs reaches the benchmark itself, so none needs the stack.

// Nothing answers here: should an option slip through, the run fails fast instead of benchmarking.
const nowhere = { KAFKA_BROKERS: '127.0.0.1:1', REDIS_URL: 'redis://127.0.0.1:1' };
const run = (script: string, args: readonly string[]) => bench(script, args, nowhere, 20_000);

const benches = [
  {
    script: 'bench/pipeline.ts',
    options: [
      '--sessions',
      '--turns',
      '--rounds',
      '--rate',
      '--partitions',
      '--seed',
      '--timeline',
      '--processes',
      '--cpu-prof <dir>',
    ],
    bad: { args: ['--sessions', '0'], says: '--sessions must be an integer ≥ 1' },
    sessionsDefault: 200,
  },
  {
    script: 'bench/baseline.ts',
    options: ['--sessions', '--turns', '--rounds', '--mode', '--style', '--partitions', '--seed'],
    bad: { args: ['--mode', 'two'], says: '--mode must be one, processes or both' },
    sessionsDefault: 200,
  },
  {
    script: 'services/validator/bench/validator.bench.ts',
    options: ['--rate', '--sessions', '--turns', '--long', '--checks'],
    bad: { args: ['--rate', '0'], says: '--rate must be an integer ≥ 1' },
    sessionsDefault: 40,
  },
];

describe.each(benches)('$script options', ({ script, options, bad, sessionsDefault }) => {
  it('--help prints every option with its default and exits 0', async () => {
    const result = await run(script, ['--help']);
    expectSucceeded(result);
    expect(result.stdout).toMatch(/^Usage: /);
    for (const option of options) expect(result.stdout).toContain(option);
    expect(result.stdout).toMatch(new RegExp(`--sessions <n> +.*\\(default ${sessionsDefault}\\)`));
    expect(result.stderr).toBe('');
  }, 30_000);

  it('-h is --help', async () => {
    const result = await run(script, ['-h']);
    expectSucceeded(result);
    expect(result.stdout).toContain('--sessions');
  }, 30_000);

  it('refuses an option it does not know with one line naming it and pointing at --help', async () => {
    const result = await run(script, ['--sesions', '10']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    const lines = result.stderr.split('\n').filter((line) => line.trim() !== '');
    expect(lines, result.stderr).toHaveLength(1);
    expect(lines[0]).toContain("unknown option '--sesions'");
    expect(lines[0]).toContain('--help');
  }, 30_000);

  it('refuses a value out of range with one line naming the option', async () => {
    const result = await run(script, bad.args);
    expect(result.code).toBe(2);
    const lines = result.stderr.split('\n').filter((line) => line.trim() !== '');
    expect(lines, result.stderr).toHaveLength(1);
    expect(lines[0]).toContain(bad.says);
  }, 30_000);
});

describe('bench/pipeline.ts --cpu-prof', () => {
  it('refuses --cpu-prof without --processes (the profiles are one per service process)', async () => {
    const result = await run('bench/pipeline.ts', ['--cpu-prof', 'profiles']);
    expect(result.code).toBe(2);
    const lines = result.stderr.split('\n').filter((line) => line.trim() !== '');
    expect(lines, result.stderr).toHaveLength(1);
    expect(lines[0]).toContain('--cpu-prof needs --processes');
  }, 30_000);
});
