import { createServer, type AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { runScript } from '../../../bench/run-bench.js';

// Runs `tidemark` as a person does (a process of its own, its output captured), and the one-line
// answer a command gives when the stack cannot be reached.

/**
 * How long a command may take to say the stack is down. The CLI checks with a 3 s deadline and a refused
 * port answers at once; the bound is generous for a busy machine, and far below the ~30 s kafkajs
 * spends retrying a broker that is down.
 */
export const unreachableBound = 8_000;

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/** Runs `node --import tsx services/cli/src/main.ts <args>` with `env` over this process's environment. */
export async function tidemark(
  args: readonly string[],
  env: Record<string, string>,
  killAfterMs = unreachableBound + 2_000,
): Promise<CliRun> {
  const started = Date.now();
  // Past the bound the answer is wrong anyway: stop waiting a little after it.
  const run = await runScript('services/cli/src/main.ts', args, env, killAfterMs);
  return { ...run, ms: Date.now() - started };
}

/** A loopback port nothing listens on: connecting to it is refused. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * The run gave up in time, non-zero, with nothing on stdout and one line on stderr that says what it
 * could not reach (each of `named`, none of `notNamed`) and how to start the stack: no log lines, no
 * stack trace.
 */
export function expectOneClearLine(
  run: CliRun,
  named: readonly string[],
  notNamed: readonly string[] = [],
): void {
  const lines = run.stderr.split('\n').filter((line) => line.trim() !== '');
  expect(run.code, run.stderr).not.toBe(0);
  expect(run.code, 'killed: no answer by the bound').not.toBeNull();
  expect(run.ms, run.stderr).toBeLessThan(unreachableBound);
  expect(run.stdout).toBe('');
  expect(lines, run.stderr).toHaveLength(1);
  const [line] = lines;
  expect(line).toMatch(/^tidemark: cannot reach /);
  expect(line).toContain('pnpm infra:up');
  for (const text of named) expect(line).toContain(text);
  for (const text of notNamed) expect(line).not.toContain(text);
}
