import { deadLetterOf, type DecodedRecord, type EventProducer } from '@tidemark/contract';
import type { DeadLetter, TurnEvent } from '@tidemark/core';
import type { Logger } from '@tidemark/service';
import type { ApplyOutcome } from '@tidemark/state';
import type { MaterializerMetrics } from './metrics.js';

/** A dead letter to publish, with the id that tells it apart from one already sent. */
export interface PendingDeadLetter {
  /** partition:offset:reason:index */
  readonly id: string;
  readonly letter: DeadLetter;
}

/** Ids remembered before the log starts over: bounds its memory on a long replay. */
const maxRemembered = 100_000;

/**
 * The dead letters of applied batches: one per refused turn and one per skipped change. A redelivered
 * turn reports the skipped changes of its first apply again (so a crash between applying and
 * dead-lettering loses none); those this process already published are not sent twice.
 */
export class DeadLetterLog {
  readonly #sent = new Set<string>();

  #lettersFor(
    records: readonly DecodedRecord<TurnEvent>[],
    outcomes: readonly ApplyOutcome[],
  ): PendingDeadLetter[] {
    const dead: PendingDeadLetter[] = [];
    outcomes.forEach((outcome, i) => {
      const raw = records[i]!.raw;
      const add = (reason: DeadLetter['reason'], index: number, message: string): void => {
        const id = `${raw.partition}:${raw.offset}:${reason}:${index}`;
        if (this.#sent.has(id)) return;
        dead.push({ id, letter: deadLetterOf(raw, reason, message, 'materializer') });
      };
      const { result, turn } = outcome;
      const where = `${turn.tenantId}/${turn.sessionId} seq ${turn.seq}`;
      // A parked turn is not refused: it applies once the turn before it comes.
      if (!result.ok && !outcome.parked) add(result.reason, -1, `${where}: ${result.message}`);
      for (const skipped of outcome.skipped) {
        add(skipped.reason, skipped.index, `${where}, change ${skipped.index} skipped: ${skipped.message}`);
      }
    });
    return dead;
  }

  /**
   * Publishes the batch's dead letters not sent yet, durably, then remembers them; each counted and
   * logged with its reason.
   */
  async publish(
    producer: EventProducer,
    records: readonly DecodedRecord<TurnEvent>[],
    outcomes: readonly ApplyOutcome[],
    told: { readonly metrics: MaterializerMetrics; readonly logger: Logger },
  ): Promise<void> {
    const dead = this.#lettersFor(records, outcomes);
    if (dead.length === 0) return;
    await producer.send(
      'deadletter',
      dead.map((d) => d.letter),
    );
    this.#remember(dead);
    for (const { letter } of dead) {
      told.metrics.deadLetter(letter.reason);
      told.logger.warn(
        { partition: letter.partition, offset: letter.offset, reason: letter.reason },
        `dead-lettered: ${letter.message}`,
      );
    }
  }

  /** Remembers letters once they are durably on the deadletter topic. */
  #remember(letters: readonly PendingDeadLetter[]): void {
    if (this.#sent.size + letters.length > maxRemembered) this.#sent.clear();
    for (const { id } of letters) this.#sent.add(id);
  }
}
