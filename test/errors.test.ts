import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ContractError } from '@tidemark/contract';
import { isRetriable, TidemarkCoreError, TidemarkError } from '@tidemark/core';
import { ConfigError } from '@tidemark/service';
import { StateError, WindowMovedError } from '@tidemark/state';
import { describe, expect, it } from 'vitest';

// One error base: every error a Tidemark package throws derives from core's TidemarkError, with a code
// from its closed list and whether retrying may help; the bus reads `retriable` to tell a known,
// redelivered condition from an unexpected failure.

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (name === 'node_modules') return [];
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** `class X extends Error` declarations (direct subclasses of Error) in the workspace's sources. */
function directErrorClasses(): string[] {
  const found: string[] = [];
  for (const top of ['libs', 'services']) {
    for (const pkg of readdirSync(join(root, top))) {
      const src = join(root, top, pkg, 'src');
      if (!statSync(src, { throwIfNoEntry: false })?.isDirectory()) continue;
      for (const file of sources(src)) {
        for (const match of readFileSync(file, 'utf8').matchAll(
          /class\s+(\w+)(?:<[^>]*>)?\s+extends\s+Error\b/g,
        )) {
          found.push(`${relative(root, file)}: ${match[1]}`);
        }
      }
    }
  }
  return found;
}

describe('one error base', () => {
  it('has TidemarkError as the only direct subclass of Error in libs and services', () => {
    expect(directErrorClasses()).toEqual(['libs/core/src/errors.ts: TidemarkError']);
  });

  it('gives every package error a code and a retriable flag the bus can read', () => {
    const errors = [
      new TidemarkCoreError('model_http', 'a 503', { retriable: true }),
      new ContractError('invalid_event', 'no tenant'),
      new ConfigError('bad KAFKA_BROKERS', ['KAFKA_BROKERS']),
      new StateError('redis', 'connect ECONNREFUSED 127.0.0.1:6379'),
      new StateError('redis', 'ERR Error running script (call to f_1): @user_script:3: bad argument'),
      new WindowMovedError(['t/s']),
    ];
    for (const error of errors) expect(error).toBeInstanceOf(TidemarkError);
    expect(errors.map((e) => [e.name, e.code, isRetriable(e)])).toEqual([
      ['TidemarkCoreError', 'model_http', true],
      ['ContractError', 'invalid_event', false],
      ['ConfigError', 'invalid_config', false],
      ['StateError', 'redis', true],
      // A script failing is a bug on one side: redelivering the batch would fail it the same way.
      ['StateError', 'redis', false],
      ['WindowMovedError', 'window_moved', true],
    ]);
    expect(isRetriable(new Error('plain'))).toBe(false);
  });
});
