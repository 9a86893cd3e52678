// The projection stores each fact as the JSON of an immutable value (an item never changes once opened; an
// end, a disposition or an artifact member neither), and every state-at reply brings back all of a
// session's open items and its span's facts: the same strings, query after query. Parsing them again each
// time was the validator's largest cost (its CPU profile: 14% in JSON.parse of items). A string seen
// recently is answered from here: the parse of the same bytes, so the answer cannot differ from parsing.

/** Entries per generation: the recent working set of open items across the sessions being decided. */
const defaultGenerationSize = 10_000;

/**
 * JSON.parse with a bounded memory of recent strings: two generations, the current filled until full,
 * then it becomes the previous (a hit there moves the entry forward) and the old previous is dropped.
 * At most twice the generation size is held; values are frozen, since every caller shares them.
 */
export class ParsedFacts {
  #current = new Map<string, unknown>();
  #previous = new Map<string, unknown>();
  readonly #generationSize: number;

  constructor(generationSize = defaultGenerationSize) {
    this.#generationSize = generationSize;
  }

  parse<T>(json: string): T {
    const hit = this.#current.get(json);
    if (hit !== undefined) return hit as T;
    const value = this.#previous.get(json) ?? Object.freeze(JSON.parse(json) as object);
    if (this.#current.size >= this.#generationSize) {
      this.#previous = this.#current;
      this.#current = new Map();
    }
    this.#current.set(json, value);
    return value as T;
  }

  /** How many strings are remembered (for tests and metrics). */
  get size(): number {
    return this.#current.size + this.#previous.size;
  }
}
