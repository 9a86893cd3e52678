import { logLevel, type LogEntry, type logCreator } from 'kafkajs';
import type { Logger } from 'pino';
import { pinoLogCreator } from './logging.js';

// A broker or Redis outage told once, not as an error line per attempt: which kafkajs lines mean a broker
// cannot be reached, which errors a service has already reported in its own words, and the kafkajs log
// mapping that keeps both at debug while one warn and one info line tell the outage.

/**
 * How kafkajs words a broker it cannot reach: a connection refused, reset or timed out ("Connection
 * error: connect ECONNREFUSED …", "Connection timeout"), closed under a request, a request that timed
 * out (a frozen broker), no broker left to try. Retry and crash lines quote their cause's words. Only
 * kafkajs's own wording: an application error that mentions a refused connection (Redis's, say) is not
 * the broker's.
 */
const connectionFailurePattern =
  /Connection error|Connection timeout|Closed connection|Request .+ timed out|Failed to connect|No broker available|KafkaJS(Connection|ConnectionClosed|RequestTimeout|NoBrokerAvailable)Error/;

const connectionFailureNames = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSNoBrokerAvailableError',
]);

/**
 * kafkajs warns about every idempotent producer whose retries are bounded: one that gives up a batch and
 * then sends the next could see its sequence numbers out of step. The publisher's producers bound their
 * retries (an unbounded one reconnects forever, even after disconnect) and never send again after a send
 * that failed or timed out: the next send goes on a new producer, under a new producer id, and a late
 * copy of the old batch is a redelivery the pipeline drops by content (publisher-producers.ts). So the
 * warning cannot apply; it is logged at debug, not as a warning every service and runtime prints.
 */
const boundedRetryWarning = 'Limiting retries for the idempotent producer';

const reportedMark = Symbol.for('tidemark.reported');

/**
 * Marks an error a batch throws as one the service has already told of in its own words (say, "state
 * lost: rebuilding"): the bus and kafkajs then log their lines about it at debug, not as errors with a
 * stack each. The batch is redelivered as for any error.
 */
export function markReported<E extends Error>(error: E): E {
  Object.defineProperty(error, reportedMark, { value: true });
  return error;
}

export function isReported(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if ((e as unknown as Record<symbol, unknown>)[reportedMark] === true) return true;
  }
  return false;
}

/** True when an error, or one of its causes (a retry gives up with the last one), is a broker not answering. */
export function isConnectionFailure(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (connectionFailureNames.has(e.name)) return true;
  }
  return false;
}

/**
 * Whether each broker answers, told once per outage: one warn when a broker stops answering, one info
 * when it answers again, with how long it was away (`downMs`). kafkajs tells of failures only in its
 * log lines (which carry the broker's address) and of answers in its request events; both are fed here.
 */
export class BrokerReachability {
  readonly #logger: Logger;
  readonly #down = new Map<string, { since: number; failures: number }>();

  constructor(logger: Logger) {
    this.#logger = logger.child({ component: 'kafka' });
  }

  get anyDown(): boolean {
    return this.#down.size > 0;
  }

  failed(broker: string, reason: string): void {
    const outage = this.#down.get(broker);
    if (outage !== undefined) {
      outage.failures += 1;
      return;
    }
    this.#down.set(broker, { since: Date.now(), failures: 1 });
    this.#logger.warn({ broker, reason }, 'kafka broker unreachable');
  }

  answered(broker: string): void {
    if (this.#down.size === 0) return;
    const outage = this.#down.get(broker);
    if (outage === undefined) return;
    this.#down.delete(broker);
    this.#logger.info(
      { broker, downMs: Date.now() - outage.since, failures: outage.failures },
      'kafka broker reachable again',
    );
  }
}

/**
 * kafkajs's log lines onto pino (`pinoLogCreator`), except that a broker outage is one story instead of
 * an error line per connection attempt and retry (two per attempt, from the connection and the broker
 * pool): a line saying a broker cannot be reached goes to debug and feeds `brokers` (which warns once),
 * and so does any retry line while a broker is away.
 */
export function outageAwareLogCreator(
  logger: Logger,
  brokers: BrokerReachability,
  reportedMessages: ReadonlySet<string>,
): logCreator {
  const write = pinoLogCreator(logger)(logLevel.DEBUG);
  return () => (entry: LogEntry) => {
    if (entry.level !== logLevel.ERROR && entry.level !== logLevel.WARN) return write(entry);
    const { message, broker, error, retryCount, retryTime } = entry.log as {
      message: string;
      broker?: unknown;
      error?: unknown;
      retryCount?: unknown;
      retryTime?: unknown;
    };
    const text = typeof error === 'string' ? `${message} ${error}` : message;
    if (text.startsWith(boundedRetryWarning)) return write({ ...entry, level: logLevel.DEBUG });
    if (connectionFailurePattern.test(text)) {
      // Only the connection's own line names the broker; the broker pool's twin line does not.
      if (entry.namespace === 'Connection' && typeof broker === 'string') brokers.failed(broker, text);
      return write({ ...entry, level: logLevel.DEBUG });
    }
    if (brokers.anyDown && (retryCount !== undefined || retryTime !== undefined)) {
      return write({ ...entry, level: logLevel.DEBUG });
    }
    // kafkajs's own lines about an error the service already reported (its batch error, its crash).
    if (
      (error instanceof Error && isReported(error)) ||
      [...reportedMessages].some((m) => text.includes(m))
    ) {
      return write({ ...entry, level: logLevel.DEBUG });
    }
    write(entry);
  };
}
