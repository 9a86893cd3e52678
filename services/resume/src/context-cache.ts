import type { ResumeContext } from '@tidemark/core';

/** Least recently used contexts first out, bounded by the size of their canonical JSON. */
export class ContextCache {
  readonly #entries = new Map<string, ResumeContext>();
  readonly #limit: number;
  #bytes = 0;

  constructor(limitBytes: number) {
    this.#limit = limitBytes;
  }

  get(key: string): ResumeContext | undefined {
    const entry = this.#entries.get(key);
    if (entry !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, entry);
    }
    return entry;
  }

  set(key: string, context: ResumeContext): void {
    // Messages and canonical hold the same text about twice.
    const size = context.canonical.length * 2;
    if (size > this.#limit) return;
    const previous = this.#entries.get(key);
    if (previous !== undefined) this.#bytes -= previous.canonical.length * 2;
    this.#entries.delete(key);
    this.#entries.set(key, context);
    this.#bytes += size;
    for (const [oldest, entry] of this.#entries) {
      if (this.#bytes <= this.#limit) break;
      this.#entries.delete(oldest);
      this.#bytes -= entry.canonical.length * 2;
    }
  }
}
