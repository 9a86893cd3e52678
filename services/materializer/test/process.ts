import { spawn, type ChildProcess } from 'node:child_process';
import { onTestFinished } from 'vitest';

// The materializer as a real process (src/main.ts under tsx, configured by its environment), for the
// tests that kill it, start it early or watch it exit.

const serviceDir = new URL('..', import.meta.url).pathname;

/** Starts the materializer process (killed when the test finishes); its stderr, or `onOutput`, gets its logs. */
export function startProcess(env: Record<string, string>, onOutput?: (line: string) => void): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: serviceDir,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: [
      'ignore',
      onOutput === undefined ? 'ignore' : 'pipe',
      onOutput === undefined ? 'inherit' : 'pipe',
    ],
  });
  if (onOutput !== undefined) {
    const take = (chunk: Buffer) => chunk.toString().split('\n').filter(Boolean).forEach(onOutput);
    child.stdout?.on('data', take);
    child.stderr?.on('data', take);
  }
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return child;
}

export const exited = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
