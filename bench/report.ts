// The benches' table: per leg, the medians over the rounds of turns/s and of CPU µs per turn summed over
// every process, with the ratios a reader needs (to the bare passthrough, and a Tidemark leg to the same
// shape in the same process mode), and the per-process breakdown the sums come from.

/** One leg's figures in one round. */
export interface LegResult {
  readonly turnsPerSecond: number;
  /** µs of CPU per turn, per process name (bench, kafka, redis, a spawned role…). */
  readonly cpu: ReadonlyMap<string, number>;
  /** Processes whose CPU is reported but not summed into the leg's figure (the bench's observers). */
  readonly excluded?: ReadonlySet<string>;
  /** Redis commands per turn (bench/redis-commands.ts), scripts' own commands included. */
  readonly redisCommands?: number;
}

export interface Leg {
  /** Row label. */
  readonly name: string;
  /** `passthrough`, `shape` or `tidemark`. */
  readonly kind: 'passthrough' | 'shape' | 'tidemark';
  /** The leg of the same shape in the same mode that a Tidemark row is read against. */
  readonly against?: readonly string[];
  readonly rounds: LegResult[];
}

export const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

const summed = (result: LegResult) =>
  [...result.cpu].reduce((sum, [name, micros]) => (result.excluded?.has(name) ? sum : sum + micros), 0);

function figures(leg: Leg) {
  const rates = leg.rounds.map((r) => r.turnsPerSecond);
  const cpu = leg.rounds.map(summed);
  return {
    rate: median(rates),
    rateRange: [Math.min(...rates), Math.max(...rates)] as const,
    cpu: median(cpu),
    cpuRange: [Math.min(...cpu), Math.max(...cpu)] as const,
    redis: leg.rounds.every((r) => r.redisCommands !== undefined)
      ? median(leg.rounds.map((r) => r.redisCommands!))
      : Number.NaN,
  };
}

const fixed = (value: number, digits: number) => (Number.isFinite(value) ? value.toFixed(digits) : '–');
const ranged = (value: number, [min, max]: readonly [number, number], digits: number, rounds: number) =>
  rounds > 1 ? `${fixed(value, digits)} (${fixed(min, digits)}–${fixed(max, digits)})` : fixed(value, digits);

/** The table, medians over the rounds (min–max in brackets), then the per-process µs per turn. */
export function table(legs: readonly Leg[]): string[] {
  const byName = new Map(legs.map((leg) => [leg.name, figures(leg)]));
  const pass = legs.find((leg) => leg.kind === 'passthrough');
  const base = pass === undefined ? undefined : byName.get(pass.name);
  const header = [
    'leg',
    'turns/s',
    'CPU µs/turn',
    'CPU ÷ pass',
    'turns/s ÷ pass',
    'CPU ÷ shape',
    'turns/s ÷ shape',
    'Redis cmds/turn',
  ];
  const rows = legs.map((leg) => {
    const f = byName.get(leg.name)!;
    const shapes = (leg.against ?? []).map((name) => byName.get(name)).filter((s) => s !== undefined);
    const n = leg.rounds.length;
    return [
      leg.name,
      ranged(f.rate, f.rateRange, 0, n),
      ranged(f.cpu, f.cpuRange, 1, n),
      base === undefined ? '–' : `${fixed(f.cpu / base.cpu, 2)}×`,
      base === undefined ? '–' : fixed(f.rate / base.rate, 3),
      shapes.map((s) => `${fixed(f.cpu / s.cpu, 2)}×`).join(' / ') || '–',
      shapes.map((s) => fixed(f.rate / s.rate, 3)).join(' / ') || '–',
      fixed(f.redis, 2),
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]) =>
    `  ${cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join(' | ')}`;
  const names = [...new Set(legs.flatMap((leg) => leg.rounds.flatMap((r) => [...r.cpu.keys()])))];
  const breakdown = legs.map((leg) => {
    const parts = names
      .filter((name) => leg.rounds.some((r) => r.cpu.has(name)))
      .map((name) => {
        const excluded = leg.rounds.some((r) => r.excluded?.has(name));
        const value = median(leg.rounds.map((r) => r.cpu.get(name) ?? 0));
        return `${name} ${fixed(value, 1)}${excluded ? ' (not summed)' : ''}`;
      });
    return `  ${leg.name}: ${parts.join(', ')}`;
  });
  return [
    line(header),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map(line),
    '',
    '  CPU µs per turn by process (medians):',
    ...breakdown,
  ];
}

/** The headline figures of each leg (medians), with its ratios to the passthrough and the same shape. */
export function headline(legs: readonly Leg[]): Record<string, number> {
  const byName = new Map(legs.map((leg) => [leg.name, figures(leg)]));
  const pass = legs.find((leg) => leg.kind === 'passthrough');
  const base = pass === undefined ? undefined : byName.get(pass.name);
  const out: Record<string, number> = {};
  for (const leg of legs) {
    const f = byName.get(leg.name)!;
    out[`${leg.kind}.${leg.name}.turnsPerSecond`] = f.rate;
    out[`${leg.kind}.${leg.name}.cpuMicrosPerTurn`] = f.cpu;
    if (Number.isFinite(f.redis)) out[`${leg.kind}.${leg.name}.redisCommandsPerTurn`] = f.redis;
    if (base !== undefined && leg !== pass) {
      out[`${leg.kind}.${leg.name}.cpuVsPassthrough`] = f.cpu / base.cpu;
      out[`${leg.kind}.${leg.name}.rateVsPassthrough`] = f.rate / base.rate;
    }
    for (const [i, name] of (leg.against ?? []).entries()) {
      const shape = byName.get(name);
      if (shape === undefined) continue;
      const style = i === 0 ? 'pipeline' : 'lua';
      out[`${leg.kind}.${leg.name}.cpuVsShape.${style}`] = f.cpu / shape.cpu;
      out[`${leg.kind}.${leg.name}.rateVsShape.${style}`] = f.rate / shape.rate;
    }
  }
  return out;
}

/** A leg to run once per round. */
export interface Plan extends Omit<Leg, 'rounds'> {
  run(round: number): Promise<LegResult>;
}

/**
 * Runs every leg once per round, the rounds interleaved (round r starts at leg r, so no leg always runs
 * first on a machine whose load drifts), and returns each leg with its rounds.
 */
export async function runRounds(plans: readonly Plan[], rounds: number): Promise<Leg[]> {
  const legs = plans.map((plan) => ({ ...plan, rounds: [] as LegResult[] }));
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < legs.length; i++) {
      const leg = legs[(round + i) % legs.length]!;
      process.stderr.write(`round ${round + 1}/${rounds}: ${leg.name}…\n`);
      leg.rounds.push(await leg.run(round));
    }
  }
  return legs.map(({ name, kind, against, rounds: results }) => ({
    name,
    kind,
    ...(against === undefined ? {} : { against }),
    rounds: results,
  }));
}
