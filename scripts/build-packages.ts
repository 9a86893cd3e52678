// Builds the installable packages (@tidemark/core, contract, adapters, client) to JavaScript with .d.ts
// in each package's dist/, and with --pack <dir> packs them there (`pnpm pack`: workspace and catalog
// versions resolved, publishConfig's exports pointing at dist/). One tsc program for all four, so a
// package's import of another stays a bare specifier, resolved by whatever installs them.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const packages = ['core', 'contract', 'adapters', 'client'] as const;
const build = join(root, '.local/packages-build');

function main(argv: readonly string[]): void {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write('Usage: tsx scripts/build-packages.ts [--pack <dir>]\n');
    return;
  }
  rmSync(build, { recursive: true, force: true });
  process.stderr.write(`building ${packages.join(', ')}…\n`);
  execFileSync(join(root, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.packages.json'], {
    cwd: root,
    stdio: 'inherit',
  });
  for (const name of packages) {
    const dist = join(root, 'libs', name, 'dist');
    rmSync(dist, { recursive: true, force: true });
    cpSync(join(build, name, 'src'), dist, { recursive: true });
  }
  // The codec reads the Avro schemas at run time: an installed contract carries its own copy.
  const schemas = join(root, 'libs/contract/dist/schemas');
  mkdirSync(schemas, { recursive: true });
  for (const file of readdirSync(join(root, 'schemas')).filter((f) => f.endsWith('.avsc'))) {
    cpSync(join(root, 'schemas', file), join(schemas, file));
  }
  const at = argv.indexOf('--pack');
  if (at >= 0) {
    const destination = resolve(argv[at + 1] ?? 'packages');
    mkdirSync(destination, { recursive: true });
    for (const name of packages) {
      execFileSync('pnpm', ['pack', '--pack-destination', destination], {
        cwd: join(root, 'libs', name),
        stdio: ['ignore', 'ignore', 'inherit'],
      });
    }
    process.stderr.write(`packed into ${destination}\n`);
  }
}

main(process.argv.slice(2));
