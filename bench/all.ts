import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FigureLine, Figures } from './figures.js';
import { integer, readFlags, refuse } from './options.js';

// `pnpm bench`: every benchmark, one after another on the stack the environment names, each printing its
// own report as it always does; then one table of issue 25's targets, every figure from this run (the
// passthrough and the same shape measured beside Tidemark in each pipeline run). `--smoke` runs each at a
// size that only proves it runs (CI does, so this cannot rot); its figures mean nothing.

const script = 'bench/all.ts';
const flags = readFlags(
  {
    script,
    invocation: 'pnpm bench',
    about: [
      'Every benchmark in one run, then the table of the performance targets (issue 25) from its figures:',
      'the pipeline against the same shape and the passthrough (one process, one process per service),',
      'the validation latency at 1,000 turns/s offered, a scaling figure (1, 2, 4 partitions and processes',
      'per service), the compactor at 10,000 open sessions, replay against the raw consume, resume latency.',
      'About 30 minutes on the 2-core machine; run it on a quiet one. See bench/README.md.',
    ],
    options: {
      smoke: { type: 'boolean', default: false },
      only: { type: 'string', default: 'all' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    described: {
      smoke: 'every benchmark at a tiny size: proves they run, measures nothing',
      only: 'the steps to run, by number (e.g. 1,7); all by default',
      help: 'print these options and exit',
    },
  },
  process.argv.slice(2),
);

const root = fileURLToPath(new URL('..', import.meta.url));
const smoke = flags.smoke;
/** The pipeline workload: the defaults (200 × 500), or a smoke's. */
const size = smoke ? ['--sessions', '10', '--turns', '160', '--rounds', '1'] : [];
const scaling = [1, 2, 4];
/** The run's scratch: the figures file, the profiles. Removed at the end. */
const dir = mkdtempSync(path.join(tmpdir(), 'tidemark-bench-'));
const began = Date.now();
const chosen =
  flags.only === 'all' ? null : new Set(flags.only.split(',').map((n) => integer(script, 'only', n)));

interface Step {
  readonly title: string;
  readonly script: string;
  readonly args: readonly string[];
  readonly nodeFlags?: readonly string[];
  readonly env?: Record<string, string>;
}

const steps: Step[] = [
  { title: 'pipeline, one process', script: 'bench/pipeline.ts', args: size },
  { title: 'pipeline, one process per service', script: 'bench/pipeline.ts', args: [...size, '--processes'] },
  {
    title: 'validation latency at 1,000 turns/s offered',
    script: 'bench/pipeline.ts',
    args: smoke
      ? [...size, '--processes', '--rate', '1000']
      : ['--sessions', '100', '--turns', '200', '--processes', '--rate', '1000'],
  },
  ...scaling.map((n) => ({
    title: `scaling: ${n} partition${n === 1 ? '' : 's'}, ${n} process${n === 1 ? '' : 'es'} per service`,
    script: 'bench/pipeline.ts',
    args: [
      ...(smoke ? size : ['--rounds', '1']),
      '--processes',
      '--partitions',
      `${n}`,
      '--instances',
      `${n}`,
    ],
  })),
  {
    title: 'compactor memory at 10,000 open sessions',
    script: 'services/compactor/bench/memory.ts',
    args: smoke ? ['200', '5'] : [],
    nodeFlags: ['--expose-gc'],
  },
  { title: 'replay', script: 'services/compactor/bench/replay.ts', args: smoke ? ['20', '50'] : [] },
  {
    title: 'resume latency',
    script: 'services/resume/bench/resume.ts',
    args: [],
    env: smoke ? { BENCH_DIGEST_RUNS: '20', BENCH_RAW_RUNS: '3' } : {},
  },
  {
    // Last, and apart: a profiled run costs more CPU, so no figure of the table comes from it.
    title: "where the CPU goes: each service's V8 CPU profile, one process per service",
    script: 'bench/pipeline.ts',
    args: [...(smoke ? size : ['--rounds', '1']), '--processes', '--cpu-prof', path.join(dir, 'profiles')],
  },
];

for (const n of chosen ?? []) if (n > steps.length) refuse(script, `--only: there are ${steps.length} steps`);

function run(step: Step, figuresFile: string): Promise<number | null> {
  const child = spawn(
    process.execPath,
    [...(step.nodeFlags ?? []), '--import', 'tsx', step.script, ...step.args],
    {
      cwd: root,
      env: { ...process.env, ...step.env, BENCH_FIGURES: figuresFile },
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** The targets table: each measure from this run's figures, its target, and whether it is met. */
function targets(lines: readonly FigureLine[]): string[] {
  const pipelines = lines.filter((l) => l.bench === 'pipeline');
  const fast = (mode: string) =>
    pipelines.find(
      (p) =>
        p.figures.mode === mode &&
        p.figures.rate === 0 &&
        p.figures.instances === 1 &&
        p.figures.partitions === 4 &&
        p.figures.profiled === 0,
    );
  const one = fast('one');
  const processes = fast('processes');
  const paced = pipelines.find((p) => p.figures.rate === 1000);
  const memory = lines.find((l) => l.bench === 'compactor-memory');
  const replay = lines.find((l) => l.bench === 'replay');
  const resume = lines.find((l) => l.bench === 'resume');
  const rows: [string, string, string, boolean | null][] = [];
  for (const [label, p] of [
    ['one process', one],
    ['one process per service', processes],
  ] as const) {
    const cpu = ratioPair(p?.figures, 'cpuVsShape');
    const rate = ratioPair(p?.figures, 'rateVsShape');
    rows.push([
      `CPU per turn ÷ same shape (${label}; pipeline / Lua)`,
      cpu.text,
      '≤ 1.25×',
      met(cpu.worst, (v) => v <= 1.25),
    ]);
    rows.push([
      `turns/s ÷ same shape (${label}; pipeline / Lua)`,
      rate.text,
      '≥ 0.8',
      met(rate.worst, (v) => v >= 0.8),
    ]);
    const pass = tidemark(p?.figures);
    rows.push([
      `CPU per turn ÷ passthrough; turns/s ÷ passthrough (${label})`,
      `${fixed(pass('cpuVsPassthrough'), 2)}×; ${fixed(pass('rateVsPassthrough'), 3)}`,
      'reported',
      null,
    ]);
    const logic = num(p?.figures['logic.cpuMicrosPerTurn']);
    const floor = [num(p?.figures['logic.floorVsShape.pipeline']), num(p?.figures['logic.floorVsShape.lua'])];
    rows.push([
      `the logic alone, in memory: CPU µs per turn; (shape + it) ÷ shape (${label}; pipeline / Lua)`,
      `${fixed(logic, 1)}; ${floor.map((f) => `${fixed(f, 2)}×`).join(' / ')}`,
      'reported (the floor)',
      null,
    ]);
    rows.push([
      `Redis commands per turn (${label}, as fast as possible)`,
      fixed(pass('redisCommandsPerTurn'), 2),
      '≤ 4',
      met(pass('redisCommandsPerTurn'), (v) => v <= 4),
    ]);
  }
  const pacedTidemark = tidemark(paced?.figures);
  rows.push([
    'Redis commands per turn (1,000 turns/s offered, per service)',
    fixed(pacedTidemark('redisCommandsPerTurn'), 2),
    '≤ 4',
    met(pacedTidemark('redisCommandsPerTurn'), (v) => v <= 4),
  ]);
  const p99 = num(paced?.figures['validation.p99Ms']);
  rows.push([
    'validation latency p99 at 1,000 turns/s offered (p50)',
    `${fixed(p99, 0)} ms (${fixed(num(paced?.figures['validation.p50Ms']), 0)} ms)`,
    '≤ 25 ms',
    met(p99, (v) => v <= 25),
  ]);
  const replayRatio = num(replay?.figures.replayVsRaw);
  rows.push(['replay ÷ raw L0 consume', fixed(replayRatio, 2), '≥ 0.8', met(replayRatio, (v) => v >= 0.8)]);
  const peak = num(memory?.figures.rssPeakMiB);
  rows.push([
    `compactor RSS peak at ${memory?.figures.sessions ?? '?'} open sessions`,
    `${fixed(peak, 0)} MiB`,
    '≤ 256 MB (244 MiB)',
    met(peak, (v) => v <= 256e6 / 2 ** 20),
  ]);
  const digest = num(resume?.figures.digestLibraryP99Ms);
  rows.push([
    'resume latency, digest mode, p99 (library, cold)',
    `${fixed(digest, 2)} ms`,
    '≤ 10 ms',
    met(digest, (v) => v <= 10),
  ]);
  for (const n of scaling) {
    const s = pipelines.find(
      (p) =>
        p.figures.instances === n &&
        p.figures.partitions === n &&
        p.figures.rate === 0 &&
        p.figures.mode === 'processes',
    );
    const t = tidemark(s?.figures);
    rows.push([
      `scaling: ${n} partition(s) and process(es) per service: turns/s, CPU µs per turn`,
      `${fixed(t('turnsPerSecond'), 0)}, ${fixed(t('cpuMicrosPerTurn'), 1)}`,
      `reported (${cpus().length} cores)`,
      null,
    ]);
  }
  const widths = (['measure', 'this run', 'target'] as const).map((title, i) =>
    Math.max(title.length, ...rows.map((r) => (r[i] as string).length)),
  );
  const line = (cells: readonly string[]) =>
    `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 4)).join(' | ')} |`;
  const mark = (m: boolean | null) => (m === null ? '' : m ? 'met' : 'NOT MET');
  return [
    `# Targets (issue 25), ${smoke ? 'SMOKE SIZES — the figures mean nothing' : 'from this run'}; ${new Date().toISOString()}, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
    '',
    line(['measure', 'this run', 'target', 'met']),
    line([...widths.map((w) => '-'.repeat(w)), '---']),
    ...rows.map(([measure, value, target, m]) => line([measure, value, target, mark(m)])),
    '',
    `command: ${['pnpm bench', ...process.argv.slice(2)].join(' ')} (${((Date.now() - began) / 60_000).toFixed(1)} min)`,
  ];
}

const num = (value: number | string | undefined): number => (typeof value === 'number' ? value : Number.NaN);
const fixed = (value: number, digits: number) => (Number.isFinite(value) ? value.toFixed(digits) : '–');
const met = (value: number, ok: (v: number) => boolean): boolean | null =>
  Number.isFinite(value) ? ok(value) : null;

/** The Tidemark leg's figures of a pipeline run (its one leg of kind `tidemark`). */
function tidemark(figures: Figures | undefined): (figure: string) => number {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(figures ?? {})) {
    // `tidemark.<leg name>.<figure>`: leg names hold no dot.
    if (!key.startsWith('tidemark.') || typeof value !== 'number') continue;
    out[key.slice(key.indexOf('.', 'tidemark.'.length) + 1)] = value;
  }
  return (figure) => out[figure] ?? Number.NaN;
}

/** A Tidemark leg's ratio to both shapes: the text `a / b`, and the worse of the two (a target holds for both). */
function ratioPair(figures: Figures | undefined, kind: 'cpuVsShape' | 'rateVsShape') {
  const t = tidemark(figures);
  const pipeline = t(`${kind}.pipeline`);
  const lua = t(`${kind}.lua`);
  const digits = kind === 'cpuVsShape' ? 2 : 3;
  const suffix = kind === 'cpuVsShape' ? '×' : '';
  return {
    text: `${fixed(pipeline, digits)}${suffix} / ${fixed(lua, digits)}${suffix}`,
    worst: kind === 'cpuVsShape' ? Math.max(pipeline, lua) : Math.min(pipeline, lua),
  };
}

async function main(): Promise<void> {
  const figuresFile = path.join(dir, 'figures.jsonl');
  const failed: string[] = [];
  try {
    for (const [index, step] of steps.entries()) {
      if (chosen !== null && !chosen.has(index + 1)) continue;
      const elapsed = ((Date.now() - began) / 60_000).toFixed(1);
      process.stderr.write(`\n[pnpm bench ${index + 1}/${steps.length}, ${elapsed} min] ${step.title}\n`);
      process.stdout.write(`\n## ${step.title}\n\n`);
      const code = await run(step, figuresFile);
      if (code !== 0) failed.push(`${step.title} (exit ${code})`);
    }
    const lines = existsSync(figuresFile)
      ? readFileSync(figuresFile, 'utf8').trim().split('\n').filter(Boolean)
      : [];
    process.stdout.write(`\n${targets(lines.map((line) => JSON.parse(line) as FigureLine)).join('\n')}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  if (failed.length > 0) {
    process.stderr.write(`pnpm bench: ${failed.length} benchmark(s) failed: ${failed.join('; ')}\n`);
    process.exit(1);
  }
}

await main();
