import { runScript } from './run-cli.js';

// Runs a benchmark of bench/ as `pnpm bench:…` does (`node --import tsx bench/<name>.ts`), its output
// captured.

export interface BenchRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** `node --import tsx <script> <args>` from the repository root, `env` over this process's environment. */
export function bench(
  script: string,
  args: readonly string[],
  env: Record<string, string>,
  killAfterMs: number,
): Promise<BenchRun> {
  return runScript(script, args, env, killAfterMs);
}
