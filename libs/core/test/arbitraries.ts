// fast-check generators of valid sessions, for property tests. A session is generated as a script of
// abstract operations and interpreted into TurnEvents, so that fast-check shrinks a failure to a short,
// readable session. (The seeded, dependency-free generator the lead reuses is generateSession in src.)
import fc from 'fast-check';
import type {
  ArtifactAction,
  Disposition,
  ItemKind,
  ItemOutcome,
  StateChange,
  TurnEvent,
  TurnRole,
} from '../src/index.js';

type Op =
  | { readonly op: 'open'; readonly kind: ItemKind; readonly parallel: number }
  | { readonly op: 'close'; readonly pick: number; readonly outcome: ItemOutcome }
  | { readonly op: 'dispose-item'; readonly pick: number; readonly disposition: Disposition }
  | { readonly op: 'dispose-key'; readonly key: number; readonly disposition: Disposition }
  | {
      readonly op: 'artifact';
      readonly path: number;
      readonly action: ArtifactAction;
      readonly version: number;
    };

const kinds: ItemKind[] = ['tool_call', 'approval_request', 'file_handle', 'subprocess', 'constraint'];
const outcomes: ItemOutcome[] = ['ok', 'error', 'cancelled'];
const dispositions: Disposition[] = ['rejected', 'failed', 'superseded'];
const actions: ArtifactAction[] = ['created', 'modified', 'deleted'];
const roles: TurnRole[] = ['user', 'assistant', 'tool', 'system'];

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('open' as const),
      kind: fc.constantFrom(...kinds),
      parallel: fc.integer({ min: 1, max: 3 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('close' as const),
      pick: fc.nat(),
      outcome: fc.constantFrom(...outcomes),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('dispose-item' as const),
      pick: fc.nat(),
      disposition: fc.constantFrom(...dispositions),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('dispose-key' as const),
      key: fc.nat({ max: 4 }),
      disposition: fc.constantFrom(...dispositions),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('artifact' as const),
      path: fc.nat({ max: 4 }),
      action: fc.constantFrom(...actions),
      version: fc.nat({ max: 3 }),
    }),
  },
);

const script = fc.array(fc.record({ role: fc.constantFrom(...roles), ops: fc.array(op, { maxLength: 4 }) }), {
  minLength: 1,
  maxLength: 50,
});

/** Interprets a script into valid turns: only open items are closed or disposed; seqs are contiguous. */
function interpret(
  turnsScript: readonly { readonly role: TurnRole; readonly ops: readonly Op[] }[],
): TurnEvent[] {
  let counter = 0;
  let open: string[] = [];
  return turnsScript.map(({ role, ops }, index) => {
    const seq = index + 1;
    const changes: StateChange[] = [];
    const superseder = (): string => `key:replacement-${seq}`;
    for (const step of ops) {
      switch (step.op) {
        case 'open':
          for (let i = 0; i < (step.kind === 'tool_call' ? step.parallel : 1); i++) {
            const itemId = `${step.kind}-${++counter}`;
            const subprocess = step.kind === 'subprocess';
            changes.push({
              type: 'item_opened',
              itemId,
              kind: step.kind,
              name: `${step.kind} ${counter}`,
              detail: step.kind === 'constraint' ? `constraint text ${counter}` : null,
              handle: subprocess ? `pid-${counter}` : null,
              logPath: subprocess ? `/logs/${counter}.log` : null,
            });
            open.push(itemId);
          }
          break;
        case 'close': {
          const itemId = open[step.pick % Math.max(1, open.length)];
          if (itemId === undefined) break;
          changes.push({ type: 'item_closed', itemId, outcome: step.outcome, detail: null });
          open = open.filter((id) => id !== itemId);
          break;
        }
        case 'dispose-item': {
          const itemId = open[step.pick % Math.max(1, open.length)];
          if (itemId === undefined) break;
          const supersededBy = step.disposition === 'superseded' ? superseder() : null;
          changes.push({
            type: 'item_disposed',
            itemKey: itemId,
            disposition: step.disposition,
            reason: `disposed at ${seq}`,
            supersededBy,
          });
          open = open.filter((id) => id !== itemId);
          break;
        }
        case 'dispose-key': {
          const supersededBy = step.disposition === 'superseded' ? superseder() : null;
          changes.push({
            type: 'item_disposed',
            itemKey: `approach:${step.key}`,
            disposition: step.disposition,
            reason: `tried at ${seq}`,
            supersededBy,
          });
          break;
        }
        case 'artifact':
          changes.push({
            type: 'artifact_recorded',
            path: `src/file-${step.path}.ts`,
            action: step.action,
            digest: step.action === 'deleted' ? null : `sha256:${step.path}-${step.version}-${seq}`,
          });
          break;
        default: {
          const never: never = step;
          throw new Error(`unhandled ${JSON.stringify(never)}`);
        }
      }
    }
    return {
      tenantId: 'tenant-p',
      sessionId: 'session-p',
      seq,
      turnId: `turn-${seq}`,
      timestamp: 1_767_225_600_000 + seq * 1000,
      role,
      content: `turn ${seq} by ${role} with ${changes.length} change(s)`,
      tokenCount: 8,
      changes,
      original: null,
    };
  });
}

/** A valid session of 1 to 50 turns. */
export const sessionArb: fc.Arbitrary<TurnEvent[]> = script.map(interpret);

/** A session and a span fromSeq..toSeq inside it. */
export const sessionWithSpanArb: fc.Arbitrary<{ turns: TurnEvent[]; fromSeq: number; toSeq: number }> =
  sessionArb.chain((turns) =>
    fc
      .tuple(fc.integer({ min: 1, max: turns.length }), fc.integer({ min: 1, max: turns.length }))
      .map(([a, b]) => ({ turns, fromSeq: Math.min(a, b), toSeq: Math.max(a, b) })),
  );
