import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, inject, onTestFinished } from 'vitest';

// For tests: runs a script of the repository as `pnpm exec tsx <script>` does (`node --import tsx
// <script>`, from the repository root), its output captured — the benchmarks (bench/ and services/*/bench/,
// smoke-sized on the real stack, or their options), and `tidemark` itself (services/cli/test/run-cli.ts).
// Plus what a bench smoke asserts: a row of figures is printed, its numbers positive, never what they
// are (they measure a shared machine, not the code).

const root = fileURLToPath(new URL('..', import.meta.url));

export interface ScriptRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Killed by runScript's timer (killAfterMs) rather than ended by itself. */
  readonly timedOut: boolean;
}

/**
 * `node <nodeFlags> --import tsx <script> <args>` from the repository root, `env` over this process's
 * environment, its output captured; killed after `killAfterMs`, or when the test ends.
 */
export function runScript(
  script: string,
  args: readonly string[],
  env: Record<string, string>,
  killAfterMs: number,
  nodeFlags: readonly string[] = [],
): Promise<ScriptRun> {
  const child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', script, ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, killAfterMs);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, timedOut });
    }),
  );
}

/**
 * A benchmark as its header comment runs it: `node [node] --import tsx <script> <args>` (`node` for what
 * the bench needs of node itself, e.g. `--expose-gc`), `env` over this process's environment.
 */
export function bench(
  script: string,
  args: readonly string[],
  env: Record<string, string>,
  killAfterMs: number,
  { node = [] }: { readonly node?: readonly string[] } = {},
): Promise<ScriptRun> {
  return runScript(script, args, env, killAfterMs, node);
}

/**
 * The script ended by itself with exit code 0; if not, the test fails saying how it ended (its code, or
 * killed after `killAfterMs`) with the end of both its streams (a bench's progress and a service's logs
 * go to either).
 */
export function expectSucceeded(run: ScriptRun): void {
  const tail = (text: string) => text.split('\n').slice(-60).join('\n');
  const ended = run.timedOut ? 'killed after its time ran out' : `exit code ${run.code}`;
  expect(
    run.code,
    `${ended}\n--- stderr (end) ---\n${tail(run.stderr)}\n--- stdout (end) ---\n${tail(run.stdout)}`,
  ).toBe(0);
}

/** The stack's variables (KAFKA_BROKERS, SCHEMA_REGISTRY_URL, REDIS_URL) for the integration project's endpoints. */
export function stackEnv(): Record<string, string> {
  const { kafkaBrokers, schemaRegistryUrl, redisUrl } = inject('endpoints');
  return {
    KAFKA_BROKERS: kafkaBrokers.join(','),
    SCHEMA_REGISTRY_URL: schemaRegistryUrl,
    REDIS_URL: redisUrl,
  };
}

// A number standing alone (not the 50 of `p50` or the 1 of `x1.02`), with thousands separators; or what
// a broken figure prints as.
const number = /(?<![\w.])(?:-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|-?Infinity|NaN)(?![\w])/g;

/** The first line of `stdout` that starts (after its indentation) with `label`; the test fails, showing the output, if none does. */
function lineOf(stdout: string, label: string): string {
  const line = stdout.split('\n').find((text) => text.trimStart().startsWith(label));
  expect(line, `a line starting with "${label}" in\n${stdout}`).toBeDefined();
  return line!;
}

/** The numbers on the line of `stdout` that starts with `label`, after the label; at least one. */
export function figures(stdout: string, label: string): number[] {
  const line = lineOf(stdout, label);
  const values = (line.trimStart().slice(label.length).match(number) ?? []).map((text) =>
    Number(text.replaceAll(',', '')),
  );
  expect(values.length, `figures on\n${line}`).toBeGreaterThan(0);
  return values;
}

/**
 * Every number on the line that starts with `label` is finite and above 0 (or at least `atLeast`, for a
 * figure that may round to 0, such as a latency read from millisecond record timestamps).
 */
export function expectPositive(stdout: string, label: string, { atLeast }: { atLeast?: number } = {}): void {
  const line = lineOf(stdout, label);
  for (const value of figures(stdout, label)) {
    expect(Number.isFinite(value), line).toBe(true);
    if (atLeast === undefined) expect(value, line).toBeGreaterThan(0);
    else expect(value, line).toBeGreaterThanOrEqual(atLeast);
  }
}
