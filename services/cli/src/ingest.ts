import { open, readFile, stat } from 'node:fs/promises';
import {
  ClaudeCodeConverter,
  completeLines,
  convertTranscript,
  pushLines,
  TranscriptError,
  type Conversion,
  type ConvertOptions,
  type InputFormat,
} from '@tidemark/adapters';
import { createPublisher, type Publisher } from '@tidemark/contract';
import { TidemarkError, type TurnEvent } from '@tidemark/core';
import { commonConfig, createLogger, logRedisOutages, parseConfig, z } from '@tidemark/service';
import { Projection, connectRedis } from '@tidemark/state';
import { provision, type Env } from './pipeline.js';

// `tidemark ingest`: a transcript file → TurnEvents (@tidemark/adapters) → turns.l0. Turn ids and seqs
// derive from the transcript, so running it again is a redelivery: the turns the projection already
// applied are not sent again, and any others are no-ops downstream. With `follow`, a growing JSONL file
// (a Claude Code session being written) is read again whenever it grows, and the turns past the last
// one published are published; a line still being written waits for its newline.

export interface IngestOptions {
  readonly env: Env;
  readonly file: string;
  readonly format: InputFormat;
  readonly tenantId: string;
  readonly sessionId: string;
  readonly follow?: boolean;
  /** How often a followed file is looked at (default 500 ms). */
  readonly intervalMs?: number;
  /** Progress lines (default stderr). */
  readonly say?: (line: string) => void;
  /** Resolves when following should stop (default: SIGINT or SIGTERM). */
  readonly until?: Promise<void>;
}

export interface IngestResult {
  /** Turns the transcript converts to (so far, when following). */
  readonly turns: number;
  /** Turns sent to turns.l0 by this run. */
  readonly published: number;
  /** Turns the projection had already applied, not sent again. */
  readonly already: number;
  /** Transcript parts the adapter did not understand and skipped. */
  readonly skipped: number;
}

export async function ingest(options: IngestOptions): Promise<IngestResult> {
  const say = options.say ?? ((line: string) => process.stderr.write(`${line}\n`));
  const config = parseConfig(z.object(commonConfig), options.env);
  const quiet = createLogger('tidemark-ingest', 'silent');
  const redis = logRedisOutages(connectRedis(config, { maxRetriesPerRequest: 2 }), quiet, 'cli');
  let publisher: Publisher | null = null;
  try {
    // The topics and subjects, if this is the first thing to use the stack (as every command does).
    await (await provision(options.env, quiet)).disconnect();
    publisher = await createPublisher({
      brokers: config.KAFKA_BROKERS,
      registryUrl: config.SCHEMA_REGISTRY_URL,
      clientId: 'tidemark-ingest',
      topicPrefix: config.TOPIC_PREFIX,
      logger: quiet,
    });
    const projection = new Projection(redis, { prefix: config.REDIS_PREFIX });
    const { appliedSeq } = await projection.watermark(options.tenantId, options.sessionId);
    const ref = { tenantId: options.tenantId, sessionId: options.sessionId };
    let sent = appliedSeq;
    let result: IngestResult = { turns: 0, published: 0, already: 0, skipped: 0 };
    let reported: string | null = null;

    const source =
      options.follow === true && options.format === 'claude-code'
        ? followedJsonl(options.file, ref)
        : wholeFile(options.file, options.format, ref);

    /** Reads what the file holds now, converts it, publishes the turns past `sent`. */
    const pass = async (): Promise<void> => {
      let turns: readonly TurnEvent[];
      let skipped: number;
      try {
        const conversion = await source();
        turns = conversion.turns;
        skipped = conversion.skipped.length;
      } catch (error) {
        if (!(error instanceof TranscriptError)) throw error;
        const where = error.line === null ? options.file : `${options.file}:${error.line}`;
        const message = `${where}: ${error.message}`;
        if (!options.follow) throw new IngestError(message);
        if (reported !== message) say(`${message} (waiting for it to be fixed; nothing after it is read)`);
        reported = message;
        return;
      }
      reported = null;
      const fresh = turns.filter((turn) => turn.seq > sent);
      if (fresh.length > 0) await publisher!.publishTurns(fresh);
      const already = Math.min(appliedSeq, turns.length);
      result = {
        turns: turns.length,
        published: result.published + fresh.length,
        already,
        skipped,
      };
      if (fresh.length > 0) {
        sent = fresh.at(-1)!.seq;
        say(`${options.file}: published turns ${fresh[0]!.seq}–${sent} of ${turns.length}`);
      }
    };

    await pass();
    if (options.follow) {
      say(`following ${options.file} (Ctrl-C stops)…`);
      const stop = options.until ?? signalled();
      let stopped = false;
      void stop.then(() => (stopped = true));
      let size = (await stat(options.file)).size;
      while (!stopped) {
        await Promise.race([stop, sleep(options.intervalMs ?? 500)]);
        if (stopped) break;
        const now = (await stat(options.file)).size;
        if (now === size) continue;
        size = now;
        await pass();
      }
    }
    return result;
  } finally {
    await publisher?.close();
    redis.disconnect();
  }
}

/** The whole file, converted each time it is read (a JSON document is rewritten, not appended to). */
function wholeFile(file: string, format: InputFormat, ref: ConvertOptions): () => Promise<Conversion> {
  return async () => convertTranscript(format, await readFile(file, 'utf8'), ref);
}

/**
 * A growing JSONL file, read from where the last read stopped: only the new complete lines are read and
 * pushed into one converter, so following a long session costs its growth, not its length. A broken
 * line stops the read before it (the lines before it are kept); the next read starts at it again.
 */
function followedJsonl(file: string, ref: ConvertOptions): () => Promise<Conversion> {
  const converter = new ClaudeCodeConverter(ref);
  let offset = 0;
  return async () => {
    const handle = await open(file, 'r');
    let fresh: Buffer;
    try {
      const { size } = await handle.stat();
      fresh = Buffer.alloc(Math.max(0, size - offset));
      await handle.read(fresh, 0, fresh.length, offset);
    } finally {
      await handle.close();
    }
    const end = fresh.lastIndexOf(0x0a) + 1;
    for (let start = 0; start < end;) {
      const next = fresh.indexOf(0x0a, start) + 1;
      const line = fresh.subarray(start, next).toString('utf8');
      pushLines(converter, completeLines(line));
      offset += next - start;
      start = next;
    }
    return converter.conversion;
  };
}

/** A transcript that cannot be ingested as it is: the message names the file (and line). */
export class IngestError extends TidemarkError<'invalid_transcript'> {
  override readonly name: string = 'IngestError';
  constructor(message: string) {
    super('invalid_transcript', message);
  }
}

function signalled(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
