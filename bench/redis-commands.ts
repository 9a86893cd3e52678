import { Redis } from 'ioredis';

// Redis commands per turn, from the server's own counters (INFO commandstats): every command a client
// sends and every command a script runs (`redis.call` counts as the command it calls), so a Lua call per
// batch is charged for what it does, not as one command. Read before and after a leg; nothing else
// should use the Redis meanwhile (the legs run one at a time).

/** calls per command name (lower case), as INFO commandstats counts them. */
export type CommandCounts = ReadonlyMap<string, number>;

export async function commandCounts(url: string): Promise<CommandCounts> {
  const redis = new Redis(url, { lazyConnect: true });
  try {
    await redis.connect();
    const info = await redis.info('commandstats');
    const counts = new Map<string, number>();
    for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
      counts.set(match[1]!, Number(match[2]));
    return counts;
  } finally {
    redis.disconnect();
  }
}

/** Commands per turn between two readings: the total, and per command (the reading's own INFO left out). */
export function commandsPerTurn(
  before: CommandCounts,
  after: CommandCounts,
  turns: number,
): { readonly total: number; readonly byCommand: ReadonlyMap<string, number> } {
  const byCommand = new Map<string, number>();
  for (const [name, calls] of after) {
    const delta = calls - (before.get(name) ?? 0) - (name === 'info' ? 1 : 0);
    if (delta > 0) byCommand.set(name, delta / turns);
  }
  const total = [...byCommand.values()].reduce((sum, value) => sum + value, 0);
  return { total, byCommand: new Map([...byCommand].sort((a, b) => b[1] - a[1])) };
}

/** One line: the total and the commands that make up most of it. */
export function describeCommands(perTurn: ReturnType<typeof commandsPerTurn>): string {
  const top = [...perTurn.byCommand]
    .slice(0, 8)
    .map(([name, value]) => `${name} ${value.toFixed(2)}`)
    .join(', ');
  return `Redis commands per turn: ${perTurn.total.toFixed(2)} (${top})`;
}
