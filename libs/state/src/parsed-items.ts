import type { ItemFact } from '@tidemark/core';

// Every state-at reply brings back all of a session's open items as JSON: the same strings, query after
// query (an item's JSON never changes once it is opened), and an open set grows with the session.
// Parsing them again each time was the validator's largest cost (its CPU profile: 14% in itemAsOf). A
// string seen recently is answered with the value parsed from it before. The memory is keyed by session
// and item id — item ids repeat across sessions (a runtime's `call-1` is in every one), and keyed by the
// id alone, 200 sessions made nearly every lookup find another session's item (a bench run: 628 hits,
// 79,057 misses) — and a hit is taken only when the stored JSON is the very same string, so the answer
// is always the parse of the bytes Redis sent, whatever ids other sessions or deployments use.

/**
 * An item as stored, open (`end: null`): what a state-at answer holds for every item still open at its
 * boundary, so the open ones are shared as they are, not copied per query; a closed one is this with its end.
 */
type OpenItem = ItemFact & { readonly end: null };

/** Entries per generation: the recent working set of open items across the sessions being decided. */
const defaultGenerationSize = 10_000;

interface Parsed {
  readonly json: string;
  readonly item: OpenItem;
}

/**
 * Item JSON parsed with a bounded memory of recent items: two generations, the current filled until
 * full, then it becomes the previous (a hit there moves the entry forward) and the old previous is
 * dropped. At most twice the generation size is held; values are frozen, since every caller shares them.
 */
export class ParsedItems {
  #current = new Map<string, Parsed>();
  #previous = new Map<string, Parsed>();
  readonly #generationSize: number;

  constructor(generationSize = defaultGenerationSize) {
    this.#generationSize = generationSize;
  }

  /** `session`: core's sessionKey (it holds one `/`, so `session/itemId` names one pair). */
  parse(session: string, itemId: string, json: string): OpenItem {
    const key = `${session}/${itemId}`;
    const hit = this.#current.get(key);
    if (hit !== undefined && hit.json === json) return hit.item;
    const older = this.#previous.get(key);
    const parsed =
      older !== undefined && older.json === json
        ? older
        : { json, item: Object.freeze({ ...(JSON.parse(json) as Omit<ItemFact, 'end'>), end: null }) };
    if (this.#current.size >= this.#generationSize) {
      this.#previous = this.#current;
      this.#current = new Map();
    }
    this.#current.set(key, parsed);
    return parsed.item;
  }

  /** How many items are remembered (for tests and metrics). */
  get size(): number {
    return this.#current.size + this.#previous.size;
  }
}
