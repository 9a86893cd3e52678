import { definePolicy, runReference, type TurnEvent } from '../libs/core/src/index.js';
import { median } from './report.js';

// What Tidemark's own logic costs with no I/O at all: core's reference (fold, plan, summarize with the
// strict repairs, decide: the functions the services run) over the bench's sessions, in this process.
// The same shape is the I/O the design needs with no logic; the two summed are a floor no implementation
// of this logic on that I/O can go under, and what Tidemark spends above that floor is spent on moving its
// state between processes (Redis reads and writes, their encodings, the garbage they make), not on
// deciding. Passes are run back to back and the median taken: the first is mostly the JIT's warm-up,
// which the services, at 100,000 turns, are long past.

export interface LogicCost {
  /** CPU µs per turn (user + system, every thread of this process: GC included, as for a service). */
  readonly cpuMicrosPerTurn: number;
  readonly compactions: number;
  readonly decisions: number;
}

const passes = 3;

export function logicCost(sessions: readonly (readonly TurnEvent[])[], maxRepairs: number): LogicCost {
  const policy = definePolicy({});
  const turns = sessions.reduce((sum, s) => sum + s.length, 0);
  const costs: number[] = [];
  let compactions = 0;
  let decisions = 0;
  for (let pass = 0; pass < passes; pass++) {
    const before = process.cpuUsage();
    compactions = 0;
    decisions = 0;
    for (const session of sessions) {
      const run = runReference(session, { policy, generation: 1, maxRepairs });
      compactions += run.compactions.length;
      decisions += run.decisions.length;
    }
    const used = process.cpuUsage(before);
    costs.push((used.user + used.system) / turns);
  }
  return { cpuMicrosPerTurn: median(costs), compactions, decisions };
}
