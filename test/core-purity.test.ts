import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// libs/core is pure: it imports nothing but its own modules and node:crypto's hashing (no Kafka, Redis,
// network, disk, not even another Tidemark package) and reads no clock, randomness or environment, so
// that it can be reasoned about and tested exhaustively and its outputs are byte-deterministic. ESLint enforces the imports too;
// this test also catches dynamic imports, require and the ambient sources of nondeterminism.

const coreRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../libs/core');
const sourceRoot = join(coreRoot, 'src');

const specifierPatterns = [
  /\bimport\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/g,
  /\bexport\s+(?:type\s+)?(?:\*|\{[^}]*\})\s*(?:as\s+\w+\s+)?from\s+['"]([^'"]+)['"]/g,
  /\bimport\s*\(\s*['"`]([^'"`]+)['"`]\s*\)/g,
  /\brequire\s*\(\s*['"`]([^'"`]+)['"`]\s*\)/g,
];
/** The one module the core may import: its hashing is deterministic and does no I/O. */
const allowedModule = 'node:crypto';

const ambient = [
  // node:crypto's randomness is as nondeterministic as Math.random.
  /\brandom(UUID|Bytes|Int|Fill|FillSync)\s*\(/,
  /\bgetRandomValues\s*\(/,
  /\bDate\.now\s*\(/,
  /\bnew Date\s*\(/,
  /\bMath\.random\s*\(/,
  /\bperformance\.now\s*\(/,
  /\bprocess\./,
  /\bglobalThis\./,
  /\bset(Timeout|Interval|Immediate)\s*\(/,
  /\bimport\.meta\b/,
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** Every import specifier in the source, and whether it stays inside libs/core/src. */
export function impurities(file: string, source: string): string[] {
  const found: string[] = [];
  for (const pattern of specifierPatterns) {
    for (const match of source.matchAll(pattern)) {
      const specifier = match[1]!;
      const inside =
        (specifier.startsWith('./') || specifier.startsWith('../')) &&
        !relative(sourceRoot, resolve(dirname(file), specifier)).startsWith('..');
      if (!inside && specifier !== allowedModule) found.push(`imports ${specifier}`);
    }
  }
  const code = source
    .split('\n')
    .filter((line) => !/^\s*(\/\/|\*|\/\*)/.test(line))
    .join('\n');
  for (const pattern of ambient) if (pattern.test(code)) found.push(`uses ${pattern.source}`);
  return found;
}

describe('libs/core purity', () => {
  it('imports nothing outside libs/core/src and reads no clock, randomness or environment', () => {
    const files = sourceFiles(sourceRoot);
    expect(files.length).toBeGreaterThan(10);
    const found = files.flatMap((file) =>
      impurities(file, readFileSync(file, 'utf8')).map((what) => `${relative(coreRoot, file)}: ${what}`),
    );
    expect(found).toEqual([]);
  });

  it('has no runtime dependencies', () => {
    const manifest = JSON.parse(readFileSync(join(coreRoot, 'package.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(manifest['dependencies'] ?? {}).toEqual({});
    expect(manifest['peerDependencies'] ?? {}).toEqual({});
    expect(manifest['optionalDependencies'] ?? {}).toEqual({});
  });

  it('would catch an I/O import, a dynamic import, a require, another package and the clock', () => {
    const file = join(sourceRoot, 'example.ts');
    expect(
      impurities(
        file,
        [
          "import { readFileSync } from 'node:fs';",
          "import { createHash, randomUUID } from 'node:crypto';",
          "import { createHash as hash } from 'crypto';",
          "import type { Kafka } from 'kafkajs';",
          "export * from '@tidemark/contract';",
          "const redis = await import('ioredis');",
          "const net = require('net');",
          "import { check } from './check.js';",
          "import { outside } from '../../contract/src/index.js';",
          'const now = Date.now();',
          'const id = randomUUID();',
          '// Date.now() in a comment is fine',
        ].join('\n'),
      ),
    ).toEqual([
      'imports node:fs',
      'imports crypto',
      'imports kafkajs',
      'imports ../../contract/src/index.js',
      'imports @tidemark/contract',
      'imports ioredis',
      'imports net',
      'uses \\brandom(UUID|Bytes|Int|Fill|FillSync)\\s*\\(',
      'uses \\bDate\\.now\\s*\\(',
    ]);
  });
});
