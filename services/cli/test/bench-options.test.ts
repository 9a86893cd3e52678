import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// `pnpm bench:pipeline` (bench/pipeline.ts) reads its options before it touches the stack: --help
// lists them, and an option it does not know is one clear line, not a stack trace. None of these runs
// reaches the benchmark itself, so none needs the stack.

const root = fileURLToPath(new URL('../../..', import.meta.url));

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function bench(args: readonly string[]): Promise<Run> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/pipeline.ts', ...args], {
    cwd: root,
    // Nothing answers here: should an option slip through, the run fails fast instead of benchmarking.
    env: { ...process.env, KAFKA_BROKERS: '127.0.0.1:1', REDIS_URL: 'redis://127.0.0.1:1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

const options = ['--sessions', '--turns', '--rounds', '--rate', '--partitions', '--seed', '--timeline', '--processes'];

describe('bench/pipeline.ts options', () => {
  it('--help prints every option with its default and exits 0', async () => {
    const run = await bench(['--help']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^Usage: /);
    for (const option of options) expect(run.stdout).toContain(option);
    expect(run.stdout).toContain('(default 200)');
    expect(run.stderr).toBe('');
  }, 30_000);

  it('-h is --help', async () => {
    const run = await bench(['-h']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('--sessions');
  }, 30_000);

  it('refuses an option it does not know with one line naming it and pointing at --help', async () => {
    const run = await bench(['--sesions', '10']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    const lines = run.stderr.split('\n').filter((line) => line.trim() !== '');
    expect(lines, run.stderr).toHaveLength(1);
    expect(lines[0]).toContain("unknown option '--sesions'");
    expect(lines[0]).toContain('--help');
  }, 30_000);

  it('refuses a value out of range with one line naming the option', async () => {
    const run = await bench(['--sessions', '0']);
    expect(run.code).toBe(2);
    const lines = run.stderr.split('\n').filter((line) => line.trim() !== '');
    expect(lines, run.stderr).toHaveLength(1);
    expect(lines[0]).toContain('--sessions must be an integer ≥ 1');
  }, 30_000);
});
