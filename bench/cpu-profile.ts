import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// What a V8 CPU profile (`node --cpu-prof`, `pnpm bench:pipeline --processes --cpu-prof <dir>`) says
// a process spent its time on: self time per function and per package, as shares of the samples that
// were not idle. Profiles are read as written; the services run under tsx, whose transform keeps
// function names but not line numbers, so a function is named by its name and file.
//
//   pnpm exec tsx bench/cpu-profile.ts <file.cpuprofile | dir> [top]

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string };
}
interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface SelfTime {
  /** Microseconds sampled outside idle, GC included. */
  readonly busyUs: number;
  readonly gcUs: number;
  /** `function file`, by self time, descending. */
  readonly functions: readonly (readonly [name: string, us: number])[];
  /** Package or workspace directory, by self time, descending. */
  readonly packages: readonly (readonly [name: string, us: number])[];
}

const repoRoot = fileURLToPath(new URL('..', import.meta.url));

/** Where a frame's code lives: a dependency by its package name, ours by its workspace path. */
function placeOf(url: string): { file: string; pkg: string } {
  if (url === '') return { file: '(native)', pkg: '(native)' };
  const dependency = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(url);
  if (dependency !== null) return { file: `${dependency[1]}/${dependency[2]}`, pkg: dependency[1]! };
  if (url.startsWith('node:')) return { file: url, pkg: 'node' };
  if (!url.startsWith('file:') && !url.startsWith('/')) return { file: url, pkg: url.split(':')[0]! };
  const file = path.relative(repoRoot, url.startsWith('file:') ? fileURLToPath(url) : url);
  return { file, pkg: file.split('/').slice(0, 2).join('/') };
}

export function selfTime(profile: CpuProfile): SelfTime {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const functions = new Map<string, number>();
  const packages = new Map<string, number>();
  let busyUs = 0;
  let gcUs = 0;
  profile.samples.forEach((id, index) => {
    const { functionName, url } = byId.get(id)!.callFrame;
    const us = profile.timeDeltas[index] ?? 0;
    if (functionName === '(idle)' || functionName === '(program)') return;
    busyUs += us;
    if (functionName === '(garbage collector)') gcUs += us;
    const { file, pkg } = placeOf(url);
    const name = `${functionName || '(anonymous)'} ${file}`;
    functions.set(name, (functions.get(name) ?? 0) + us);
    packages.set(pkg, (packages.get(pkg) ?? 0) + us);
  });
  const sorted = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1]);
  return { busyUs, gcUs, functions: sorted(functions), packages: sorted(packages) };
}

export function readProfile(file: string): CpuProfile {
  return JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
}

/** The largest profile in a directory (a process may write a second, tiny one for a worker thread). */
export function mainProfileIn(dir: string): string | null {
  if (!existsSync(dir)) return null;
  const files = readdirSync(dir)
    .filter((name) => name.endsWith('.cpuprofile'))
    .map((name) => path.join(dir, name));
  return files.sort((a, b) => statSync(b).size - statSync(a).size)[0] ?? null;
}

/** Lines for a report: busy time, GC share, top packages and functions, as shares of busy time. */
export function describeSelfTime(title: string, time: SelfTime, top = 12): string[] {
  const share = (us: number) => `${((100 * us) / Math.max(1, time.busyUs)).toFixed(1).padStart(5)}%`;
  return [
    `${title}: ${(time.busyUs / 1e6).toFixed(2)} s busy, ${share(time.gcUs).trim()} of it garbage collection`,
    `  packages: ${time.packages
      .slice(0, 6)
      .map(([name, us]) => `${name} ${share(us).trim()}`)
      .join(', ')}`,
    ...time.functions.slice(0, top).map(([name, us]) => `  ${share(us)}  ${name}`),
  ];
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const [target, topArg] = process.argv.slice(2);
  if (target === undefined || target === '--help' || target === '-h') {
    process.stdout.write('Usage: pnpm exec tsx bench/cpu-profile.ts <file.cpuprofile | dir> [top]\n');
    process.exit(target === undefined ? 2 : 0);
  }
  const file = statSync(target).isDirectory() ? mainProfileIn(target) : target;
  if (file === null) {
    process.stderr.write(`bench/cpu-profile.ts: no .cpuprofile in ${target}\n`);
    process.exit(2);
  }
  const top = Number(topArg ?? 25);
  process.stdout.write(`${describeSelfTime(file, selfTime(readProfile(file)), top).join('\n')}\n`);
}
