import type { ChildProcess } from 'node:child_process';

// The processes a bench leg spawns (services, shape groups, observers): how it hears from them over IPC
// and how it ends them.

/** All of a leg's groups or services in the bench's process, or one process each. */
export type ProcessMode = 'one' | 'processes';

/** The child's next IPC message of `type`; rejects if it exits first or after `ms`. */
export function said<T = unknown>(child: ChildProcess, type: string, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const settle = () => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    const onMessage = (message: { type?: string }) => {
      if (message.type !== type) return;
      settle();
      resolve(message as T);
    };
    const onExit = (code: number | null) => {
      settle();
      reject(new Error(`a bench child exited (${code}) before ${type}`));
    };
    const timer = setTimeout(() => {
      settle();
      reject(new Error(`no ${type} from a bench child after ${ms / 1000} s`));
    }, ms);
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** SIGTERM, and SIGKILL after 15 s; resolves once the child has exited. */
export function ended(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const force = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
