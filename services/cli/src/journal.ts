import { randomUUID } from 'node:crypto';
import { sessionKey, type Bus, type EventConsumer } from '@tidemark/contract';
import type { Compaction, MarkerDecision } from '@tidemark/core';
import { decisionIdentity } from './settle.js';

// A read-only tail of the compactions and markers topics, grouped by session: what `inspect`, the demo
// report and the end-to-end tests look at. It joins throwaway consumer groups, so it never moves the
// offsets of a service. Duplicates (the same bytes delivered twice) are kept once.

export interface SessionJournal {
  /** Every distinct compaction of the session, in topic order. */
  readonly compactions: Compaction[];
  /** Every distinct marker decision of the session, in topic order. */
  readonly decisions: MarkerDecision[];
}

export class Journal {
  readonly #sessions = new Map<string, SessionJournal>();
  readonly #seen = new Set<string>();
  readonly #consumers: EventConsumer[];
  readonly #only: ReadonlySet<string> | null;

  private constructor(bus: Bus, only: ReadonlySet<string> | null) {
    this.#only = only;
    const group = `tidemark-journal-${randomUUID().slice(0, 8)}`;
    this.#consumers = [
      bus.consumer({
        groupId: `${group}-compactions`,
        role: 'compactions',
        fromBeginning: true,
        onBatch: (records) => {
          for (const { value } of records)
            this.#add(sessionKey(value.tenantId, value.sessionId), 'compactions', value);
          return Promise.resolve();
        },
      }),
      bus.consumer({
        groupId: `${group}-markers`,
        role: 'markers',
        fromBeginning: true,
        onBatch: (records) => {
          for (const { value } of records)
            this.#add(sessionKey(value.tenantId, value.sessionId), 'decisions', value);
          return Promise.resolve();
        },
      }),
    ];
  }

  /** Starts tailing; `only` limits it to these `tenant/session` keys. */
  static async open(bus: Bus, only?: Iterable<string>): Promise<Journal> {
    const journal = new Journal(bus, only === undefined ? null : new Set(only));
    await Promise.all(journal.#consumers.map((c) => c.run()));
    return journal;
  }

  session(tenantId: string, sessionId: string): SessionJournal {
    return this.#sessions.get(sessionKey(tenantId, sessionId)) ?? { compactions: [], decisions: [] };
  }

  /** Resolves once both tails have joined and read everything on the topics (lag 0), or after the timeout. */
  async caughtUp(timeoutMs = 30_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.#consumers.every((c) => c.ready())) {
        const lags = await Promise.all(this.#consumers.map((c) => c.lag()));
        if (lags.every((lag) => lag === 0)) return true;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return false;
  }

  /** Polls until the predicate holds, or false after the timeout. */
  async until(predicate: () => boolean, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return true;
  }

  async close(): Promise<void> {
    await Promise.all(this.#consumers.map((c) => c.stop()));
  }

  #add<K extends keyof SessionJournal>(key: string, kind: K, value: SessionJournal[K][number]): void {
    if (this.#only !== null && !this.#only.has(key)) return;
    const identity = identityOf(value);
    if (this.#seen.has(identity)) return;
    this.#seen.add(identity);
    let session = this.#sessions.get(key);
    if (session === undefined) {
      session = { compactions: [], decisions: [] };
      this.#sessions.set(key, session);
    }
    (session[kind] as SessionJournal[K][number][]).push(value);
  }
}

// A compaction is its id (content-derived); a marker has at most one decision per type and cause
// (emitted, invalid on its check, invalid after a depth change), each with fixed bytes.
function identityOf(value: Compaction | MarkerDecision): string {
  return 'claims' in value ? `c:${value.compactionId}` : `m:${decisionIdentity(value)}`;
}
