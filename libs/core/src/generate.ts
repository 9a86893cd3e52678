import type {
  Disposition,
  ItemKind,
  ItemOpened,
  ItemOutcome,
  StateChange,
  TurnEvent,
  TurnRole,
} from './model.js';
import { estimateTokens } from './tokens.js';

// A deterministic session generator: the same seed and options always give the same turns. It makes
// valid L0 (contiguous seqs; items closed or disposed only while open) with everything the check cares
// about: parallel tool calls, approvals answered or rejected, subprocesses with handles and log paths,
// file handles, constraints superseded by newer ones, rejected and failed approaches, and artifacts
// created, modified and deleted. For tests, benchmarks and the workload generator.

export interface SessionGeneratorOptions {
  readonly tenantId?: string;
  readonly sessionId?: string;
  /** How many turns (default 200). */
  readonly turns?: number;
  /** The first turn's timestamp, in epoch milliseconds (default 2026-01-01T00:00:00Z); one second apart. */
  readonly startTimestamp?: number;
  /** About how many characters of content a turn has (default 160). */
  readonly contentChars?: number;
  /** How eventful turns are, 0 to 1 (default 0.5): scales the odds of every state change. */
  readonly activity?: number;
  /** Per-turn odds of particular events at activity 0.5 (the workload generator's knobs). */
  readonly rates?: Partial<GeneratorRates>;
}

export interface GeneratorRates {
  /** A turn starts a batch of one to three parallel tool calls (default 0.2). */
  readonly toolCalls: number;
  /** The share of tool calls that run long, so that they often cross a compaction boundary (default 0). */
  readonly longCalls: number;
  /** A turn records a rejected approach (default 0.02). */
  readonly rejections: number;
  /** A turn records a failed approach (default 0.02). */
  readonly failures: number;
  /** A turn creates, modifies or deletes an artifact (default 0.06). */
  readonly artifacts: number;
}

export const defaultGeneratorRates: GeneratorRates = {
  toolCalls: 0.2,
  longCalls: 0,
  rejections: 0.02,
  failures: 0.02,
  artifacts: 0.06,
};

/** mulberry32: a small, fast, well-distributed 32-bit PRNG, returning floats in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const words = [
  'migration',
  'schema',
  'rollback',
  'column',
  'backfill',
  'index',
  'query',
  'test',
  'deploy',
  'config',
  'service',
  'latency',
  'retry',
  'cache',
  'token',
  'budget',
  'review',
  'patch',
  'build',
  'lint',
];

interface OpenItem {
  readonly itemId: string;
  readonly kind: ItemKind;
  /** A long-running tool call: it returns rarely. */
  readonly long?: boolean;
}

export function generateSession(seed: number, options: SessionGeneratorOptions = {}): TurnEvent[] {
  const tenantId = options.tenantId ?? 'tenant-a';
  const sessionId = options.sessionId ?? `session-${seed}`;
  const count = options.turns ?? 200;
  const start = options.startTimestamp ?? Date.UTC(2026, 0, 1);
  const contentChars = options.contentChars ?? 160;
  const activity = Math.min(1, Math.max(0, options.activity ?? 0.5));
  const rates: GeneratorRates = { ...defaultGeneratorRates, ...options.rates };
  const random = seededRandom(seed);
  const chance = (p: number): boolean => random() < p * activity * 2;
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

  let counter = 0;
  const next = (prefix: string): string => `${prefix}-${++counter}`;
  let open: OpenItem[] = [];
  const files = new Map<string, number>();
  const turns: TurnEvent[] = [];

  for (let seq = 1; seq <= count; seq++) {
    const changes: StateChange[] = [];
    const role: TurnRole =
      seq === 1 || chance(0.1)
        ? 'user'
        : open.some((item) => item.kind === 'tool_call') && chance(0.3)
          ? 'tool'
          : 'assistant';
    const opened = (kind: ItemKind, name: string, extra: Partial<Omit<ItemOpened, 'type'>> = {}): string => {
      const itemId = next(
        kind === 'constraint' ? 'constraint' : kind === 'tool_call' ? 'call' : kind.replace('_', '-'),
      );
      changes.push({
        type: 'item_opened',
        itemId,
        kind,
        name,
        detail: null,
        handle: null,
        logPath: null,
        ...extra,
      });
      open.push({ itemId, kind });
      return itemId;
    };
    const end = (item: OpenItem): void => {
      open = open.filter((o) => o.itemId !== item.itemId);
    };

    // Close or dispose some of what is open: tool calls return soon, the rest lingers.
    for (const item of [...open]) {
      const odds =
        item.kind === 'tool_call'
          ? item.long === true
            ? 0.02
            : 0.35
          : item.kind === 'constraint'
            ? 0.01
            : 0.08;
      if (!chance(odds)) continue;
      if (item.kind === 'approval_request' && chance(0.3)) {
        changes.push({
          type: 'item_disposed',
          itemKey: item.itemId,
          disposition: 'rejected',
          reason: 'the user declined',
          supersededBy: null,
        });
      } else {
        const outcome: ItemOutcome = pick(['ok', 'ok', 'ok', 'ok', 'error', 'cancelled']);
        changes.push({
          type: 'item_closed',
          itemId: item.itemId,
          outcome,
          detail: outcome === 'ok' ? null : `${outcome} after ${seq} turns`,
        });
      }
      end(item);
    }
    if (chance(rates.toolCalls)) {
      const parallel = 1 + Math.floor(random() * 3);
      for (let i = 0; i < parallel; i++) {
        const itemId = opened('tool_call', pick(['read_file', 'run_tests', 'grep', 'apply_patch']), {
          detail: `{"arg":"${pick(words)}"}`,
        });
        // Drawn only when asked for, so the default sessions stay what they always were.
        if (rates.longCalls > 0 && random() < rates.longCalls) {
          open = open.map((item) => (item.itemId === itemId ? { ...item, long: true } : item));
        }
      }
    }
    if (chance(0.03)) opened('approval_request', `approve ${pick(words)} change`);
    if (chance(0.02)) {
      const n = counter + 1;
      opened('subprocess', `npm run ${pick(words)}`, {
        handle: `pid-${1000 + n}`,
        logPath: `/var/log/agent/proc-${n}.log`,
      });
    }
    if (chance(0.02)) opened('file_handle', `src/${pick(words)}.ts`, { handle: `fd-${counter + 1}` });
    if (role === 'user' && chance(0.15)) {
      const previous = open.find((item) => item.kind === 'constraint');
      const id = opened('constraint', `keep the ${pick(words)} ${pick(words)}`, {
        detail: `The ${pick(words)} must stay ${pick(['reversible', 'backwards compatible', 'under budget'])}.`,
      });
      if (previous !== undefined && chance(0.4)) {
        changes.push({
          type: 'item_disposed',
          itemKey: previous.itemId,
          disposition: 'superseded',
          reason: 'the user replaced it',
          supersededBy: id,
        });
        end(previous);
      }
    }
    const negative = rates.rejections + rates.failures;
    if (negative > 0 && chance(negative)) {
      const disposition: Disposition = random() < rates.rejections / negative ? 'rejected' : 'failed';
      changes.push({
        type: 'item_disposed',
        itemKey: `approach:${pick(words)}-${pick(words)}`,
        disposition,
        reason: `${disposition} on a dry run`,
        supersededBy: null,
      });
    }
    if (chance(rates.artifacts)) {
      const existing = [...files.keys()];
      const action = existing.length === 0 || chance(0.4) ? 'created' : chance(0.8) ? 'modified' : 'deleted';
      const path = action === 'created' ? `src/${pick(words)}-${next('file')}.ts` : pick(existing);
      const version = (files.get(path) ?? 0) + 1;
      if (action === 'deleted') files.delete(path);
      else files.set(path, version);
      changes.push({
        type: 'artifact_recorded',
        path,
        action,
        digest: action === 'deleted' ? null : `sha256:${seed}-${path}-${version}`,
      });
    }

    let content = '';
    while (content.length < contentChars) content += `${content.length === 0 ? '' : ' '}${pick(words)}`;
    turns.push({
      tenantId,
      sessionId,
      seq,
      turnId: `${sessionId}-turn-${seq}`,
      timestamp: start + (seq - 1) * 1000,
      role,
      content,
      tokenCount: estimateTokens(content),
      changes,
      original: null,
    });
  }
  return turns;
}
