import { appendFileSync } from 'node:fs';

// What `pnpm bench` (bench/all.ts) collects from the benchmarks it runs: each one, when BENCH_FIGURES names
// a file, appends its headline figures to it as one JSON line, beside the report it prints as always.

/** One benchmark's headline figures, by name (a number, or a text such as a mode). */
export type Figures = Readonly<Record<string, number | string>>;

export interface FigureLine {
  readonly bench: string;
  readonly figures: Figures;
}

/** Appends the figures to BENCH_FIGURES's file, when it is set (run by `pnpm bench`); else nothing. */
export function recordFigures(bench: string, figures: Figures): void {
  const file = process.env.BENCH_FIGURES;
  if (file === undefined || file === '') return;
  appendFileSync(file, `${JSON.stringify({ bench, figures } satisfies FigureLine)}\n`);
}
