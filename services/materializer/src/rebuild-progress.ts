/** Where a partition's replay stands: its offsets. */
interface PartitionOffsets {
  readonly partition: number;
  readonly high: string;
  readonly low: string;
}

/**
 * What a rebuild tracks until the replay has reached the end of L0 as it was when the rebuild began
 * (or the consumer has gone idle: records dead-lettered by the bus never reach the materializer).
 */
export class RebuildProgress {
  /** Per partition, the end offset (high watermark) at the start. */
  readonly #targets: ReadonlyMap<number, number>;
  /** Per partition, the next offset after the last record applied. */
  readonly #reached: Map<number, number>;
  lastBatchAt = Date.now();
  /** Batches being applied right now (a slow batch is not an idle consumer). */
  inFlight = 0;

  constructor(
    readonly epoch: string,
    ends: readonly PartitionOffsets[],
  ) {
    this.#targets = new Map(ends.map((p) => [p.partition, Number(p.high)]));
    this.#reached = new Map(ends.map((p) => [p.partition, Number(p.low)]));
  }

  /** A batch was applied up to this record. */
  applied(last: { readonly partition: number; readonly offset: number }): void {
    const reached = this.#reached.get(last.partition) ?? 0;
    this.#reached.set(last.partition, Math.max(reached, last.offset + 1));
    this.lastBatchAt = Date.now();
  }

  reachedAll(): boolean {
    return [...this.#targets].every(([partition, high]) => (this.#reached.get(partition) ?? 0) >= high);
  }

  describeTargets(): Record<number, number> {
    return Object.fromEntries(this.#targets);
  }
}
