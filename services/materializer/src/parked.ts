import { L0Reader, turnDecoder, type Bus, type DecodedRecord, type EventProducer } from '@tidemark/contract';
import { sessionKey, type TurnEvent } from '@tidemark/core';
import type { Logger } from '@tidemark/service';
import type { Projection, ReleasedTurn, StallChange } from '@tidemark/state';

// Turns that came before the turn they follow are parked by the projection (not dead letters); once
// the missing turn is applied the projection releases them, and they are published again to turns.l0,
// right after the turn they waited for. There they apply like any turn, and every reader of turns.l0
// (the compactor, the resume service's raw reads) meets them in seq order. Their first copies stay
// where they are, refused as gaps by every reader; a copy published twice (a crash between the release
// and its publishing tells it again) is a redelivery, a no-op. A rebuild replaying turns.l0 releases
// every past gap again, while the copies published then are further on in the log: it defers them, and
// publishes once caught up only those the replay did not meet (lost to a crash before their publishing).

export class ParkedTurns {
  readonly #reader: L0Reader;
  readonly #topic: string;
  readonly #projection: Projection;
  readonly #logger: Logger;
  /** Told how many turns each publishing wrote (the metric). */
  readonly #published: (count: number) => void;
  #deferred: ReleasedTurn[] = [];

  constructor(bus: Bus, projection: Projection, logger: Logger, published: (count: number) => void) {
    this.#reader = new L0Reader({ kafka: bus.kafka, decode: turnDecoder(bus.registry, bus.maxEventBytes) });
    this.#topic = bus.topics.turns;
    this.#projection = projection;
    this.#logger = logger;
    this.#published = published;
  }

  /**
   * Publishes the released turns again, in the order released (each session's in seq order); one
   * read of turns.l0 per partition for those not in the batch at hand. Resolves once they are written.
   */
  async republish(
    producer: EventProducer,
    batch: readonly DecodedRecord<TurnEvent>[],
    released: readonly ReleasedTurn[],
  ): Promise<number> {
    const logger = this.#logger;
    const at = (partition: number, offset: number) => `${partition}:${offset}`;
    const found = new Map<string, TurnEvent | null>();
    for (const record of batch) found.set(at(record.raw.partition, record.raw.offset), record.value);
    const missing = new Map<number, number[]>();
    for (const { partition, offset } of released) {
      if (found.has(at(partition, offset))) continue;
      const offsets = missing.get(partition);
      if (offsets === undefined) missing.set(partition, [offset]);
      else offsets.push(offset);
    }
    await Promise.all(
      [...missing].map(async ([partition, offsets]) => {
        const turns = await this.#reader.turnsAt(this.#topic, partition, offsets);
        offsets.forEach((offset, i) => found.set(at(partition, offset), turns[i]!));
      }),
    );
    const turns: TurnEvent[] = [];
    /** Sessions with a parked turn gone: what follows it stays parked. */
    const lost = new Set<string>();
    for (const parked of released) {
      const session = sessionKey(parked.tenantId, parked.sessionId);
      if (lost.has(session)) continue;
      const turn = found.get(at(parked.partition, parked.offset)) ?? null;
      // The projection parked only valid turns of this session; a record not found is gone from
      // turns.l0 (retention). The turn is lost as a refused one is: the session is broken at its seq, so
      // it shows as stalled, waiting for it, until it is published again.
      if (turn === null || turn.seq !== parked.seq || sessionKey(turn.tenantId, turn.sessionId) !== session) {
        lost.add(session);
        await this.#projection.markBroken(parked.tenantId, parked.sessionId, parked.seq, 'seq_gap');
        logger.error(
          {
            session: sessionKey(parked.tenantId, parked.sessionId),
            seq: parked.seq,
            partition: parked.partition,
            offset: parked.offset,
          },
          'a parked turn is no longer in turns.l0: the session is broken there; publish it again',
        );
        continue;
      }
      turns.push(turn);
    }
    if (turns.length > 0) {
      await producer.send('turns', turns);
      logger.info({ turns: turns.length }, 'parked turns published again: the turns they waited for came');
    }
    this.#published(turns.length);
    return turns.length;
  }

  /** Released while a rebuild replays turns.l0: see flushDeferred. */
  defer(released: readonly ReleasedTurn[]): void {
    this.#deferred.push(...released);
  }

  /** A rebuild started over: what an earlier one deferred is released again by this one. */
  dropDeferred(): void {
    this.#deferred = [];
  }

  /**
   * Once the rebuild caught up: publishes again the deferred turns the replay did not meet applied (kept
   * for the next call if publishing fails). Resolves to how many were published.
   */
  async flushDeferred(producer: EventProducer): Promise<number> {
    const deferred = this.#deferred;
    if (deferred.length === 0) return 0;
    this.#deferred = [];
    try {
      const sessions = new Map(deferred.map((r) => [sessionKey(r.tenantId, r.sessionId), r]));
      const applied = new Map<string, number>();
      await Promise.all(
        [...sessions].map(async ([key, r]) =>
          applied.set(key, (await this.#projection.watermark(r.tenantId, r.sessionId)).appliedSeq),
        ),
      );
      const missing = deferred.filter((r) => applied.get(sessionKey(r.tenantId, r.sessionId))! < r.seq);
      return missing.length === 0 ? 0 : await this.republish(producer, [], missing);
    } catch (error) {
      this.#deferred = [...deferred, ...this.#deferred];
      throw error;
    }
  }

  close(): Promise<void> {
    return this.#reader.close();
  }
}

/** A stall that began is a warning (what to publish), one that ended an info line; one that goes on, nothing. */
export function logStalls(logger: Logger, stalls: readonly StallChange[]): void {
  for (const stall of stalls) {
    const session = sessionKey(stall.tenantId, stall.sessionId);
    if (stall.change === 'began') {
      logger.warn(
        { session, expectedSeq: stall.expectedSeq },
        `session stalled: waiting for seq ${stall.expectedSeq}; publish it (again)`,
      );
    } else if (stall.change === 'ended') {
      logger.info({ session }, 'session no longer stalled: the turn it waited for was applied');
    }
  }
}
