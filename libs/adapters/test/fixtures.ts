import { readdirSync, readFileSync } from 'node:fs';
import {
  buildResumeContext,
  foldDecisions,
  markerEmitted,
  resumePlan,
  type ArtifactAction,
  type Disposition,
  type ItemKind,
  type ItemOutcome,
  type ResumeContext,
  type TurnEvent,
} from '@tidemark/core';
import { strictL1Node } from '@tidemark/core/testing';
import { expect } from 'vitest';
import { inputFormats, type Conversion, type ConvertOptions, type InputFormat } from '../src/types.js';

// What the adapter tests share: the hand-written transcripts in test/fixtures/transcripts and their
// hand-checked expectations, the items and artifacts a conversion gives in the expectations' terms, the
// resume context a strict L1 node over turns 1..b gives at every boundary b, and what every provider
// body made of such a context must be.

const transcripts = new URL('../../../test/fixtures/transcripts/', import.meta.url);

/** A transcript fixture: its file name, the format it is in (from the name) and its text. */
export interface TranscriptFixture {
  readonly file: string;
  readonly format: InputFormat;
  readonly text: string;
}

/** The text of a fixture file, e.g. `claude-code.jsonl`. */
export function fixtureText(file: string): string {
  return readFileSync(new URL(file, transcripts), 'utf8');
}

/** A JSON fixture converted by the adapter under test, with what its tests read of it. */
export interface ConvertedFixture<Transcript, Extra> extends Conversion {
  /** The fixture file, parsed. */
  readonly transcript: Transcript;
  readonly expected: Expectation<Extra>;
  readonly options: ConvertOptions;
  /** Every boundary a resume of the turns can start after. */
  readonly boundaries: readonly number[];
}

/** A JSON fixture file, parsed as `Transcript`, with its expectation, converted into `options`' session. */
export function convertedFixture<Transcript, Extra = unknown>(
  file: string,
  options: ConvertOptions,
  convert: (transcript: Transcript, options: ConvertOptions) => Conversion,
): ConvertedFixture<Transcript, Extra> {
  const transcript = JSON.parse(fixtureText(file)) as Transcript;
  const conversion = convert(transcript, options);
  const boundaries = boundariesOf(conversion.turns);
  return { transcript, expected: expectationOf<Extra>(file), options, ...conversion, boundaries };
}

/** Every transcript fixture (not the expectations), with its format: the format its name starts with. */
export function transcriptFixtures(): TranscriptFixture[] {
  return readdirSync(transcripts)
    .filter((file) => /\.jsonl?$/.test(file) && !file.endsWith('.expected.json'))
    .sort()
    .map((file) => {
      const format = inputFormats.find((name) => new RegExp(`^${name}([.-]|$)`).test(file));
      if (format === undefined) throw new Error(`${file}: no input format is named by the file name`);
      return { file, format, text: fixtureText(file) };
    });
}

/** An item as the expectations list it: where it opened, and where and how it ended. */
export interface ObservedItem {
  readonly itemId: string;
  readonly kind: ItemKind;
  readonly name: string;
  readonly openedAtSeq: number;
  readonly closedAtSeq: number | null;
  readonly outcome: ItemOutcome | null;
  /** Only with `{ handles: true }`, and only on subprocess items. */
  readonly handle?: string | null;
  readonly logPath?: string | null;
  /** Only on items a turn disposed of. */
  readonly disposition?: Disposition;
}

export interface ObservedArtifact {
  readonly path: string;
  readonly action: ArtifactAction;
  readonly seq: number;
  readonly digest: string | null;
}

/** What every `<fixture>.expected.json` holds, with `Extra` for what only one of them checks. */
export type Expectation<Extra = unknown> = Extra & {
  readonly turns: number;
  readonly items: readonly ObservedItem[];
  readonly artifacts: readonly ObservedArtifact[];
};

/** The hand-checked expectation of a fixture: `openai-chat.json` → `openai-chat.expected.json`. */
export function expectationOf<Extra = unknown>(file: string): Expectation<Extra> {
  return JSON.parse(fixtureText(file.replace(/\.jsonl?$/, '.expected.json'))) as Expectation<Extra>;
}

/**
 * Every item the turns open, in opening order, with where and how it ended and any disposition; with
 * `handles`, a subprocess item's handle and log path too. Closing or disposing of an item no turn opened
 * is an error: no comparison should pass over it.
 */
export function itemsOf(turns: readonly TurnEvent[], options: { handles?: boolean } = {}): ObservedItem[] {
  const items: ObservedItem[] = [];
  const update = (itemId: string, seq: number, changed: Partial<ObservedItem>) => {
    const index = items.findLastIndex((item) => item.itemId === itemId);
    if (index < 0) throw new Error(`turn ${seq} ends item ${itemId}, which no turn opened`);
    items[index] = { ...items[index]!, ...changed };
  };
  for (const turn of turns) {
    for (const change of turn.changes) {
      switch (change.type) {
        case 'item_opened': {
          const { itemId, kind, name } = change;
          const item = { itemId, kind, name, openedAtSeq: turn.seq, closedAtSeq: null, outcome: null };
          const handles = options.handles === true && kind === 'subprocess';
          items.push(handles ? { ...item, handle: change.handle, logPath: change.logPath } : item);
          break;
        }
        case 'item_closed':
          update(change.itemId, turn.seq, { closedAtSeq: turn.seq, outcome: change.outcome });
          break;
        case 'item_disposed':
          update(change.itemKey, turn.seq, { disposition: change.disposition });
          break;
        case 'artifact_recorded':
          break;
        default: {
          const never: never = change;
          throw new Error(`unexpected change ${JSON.stringify(never)}`);
        }
      }
    }
  }
  return items;
}

/** Every artifact the turns record, in order, with the seq of the turn that records it. */
export function artifactsOf(turns: readonly TurnEvent[]): ObservedArtifact[] {
  return turns.flatMap((turn) =>
    turn.changes.flatMap((change) =>
      change.type === 'artifact_recorded'
        ? [{ path: change.path, action: change.action, seq: turn.seq, digest: change.digest }]
        : [],
    ),
  );
}

/**
 * The context a resume assembles when a valid marker covers turns 1..boundary: the node, then the raw
 * turns after it. Boundary 0: no node, the raw log from the start.
 */
export function contextAt(turns: readonly TurnEvent[], boundary: number): ResumeContext {
  const { tenantId, sessionId } = turns[0]!;
  const node = boundary === 0 ? null : strictL1Node({ turns, fromSeq: 1, toSeq: boundary });
  const plan = resumePlan(foldDecisions(node === null ? [] : [markerEmitted(node)]), {
    tenantId,
    sessionId,
    l0Partition: 0,
  });
  return buildResumeContext({ plan, node, turns: turns.slice(boundary) });
}

/** Every boundary a resume of these turns can start after: 0 (none), 1, … turns.length. */
export function boundariesOf(turns: readonly TurnEvent[]): number[] {
  return Array.from({ length: turns.length + 1 }, (_, boundary) => boundary);
}

/**
 * The resume after turn `boundary` in one provider format (`to`), with what every format must give
 * checked: no problem the provider would refuse (`problems`), and the same body and contextHash for
 * the same context, given again or built again. `at` names the case in a failure. The context, body
 * and hash come back for the format's own checks.
 */
export function validResumeAt<Body>(
  turns: readonly TurnEvent[],
  boundary: number,
  to: (context: ResumeContext) => { readonly body: Body; readonly contextHash: string },
  problems: (body: NoInfer<Body>) => readonly string[],
  at = `resumed after turn ${boundary}`,
): { readonly context: ResumeContext; readonly body: Body; readonly contextHash: string } {
  const context = contextAt(turns, boundary);
  const { body, contextHash } = to(context);
  expect(problems(body), at).toEqual([]);
  for (const again of [to(context), to(contextAt(turns, boundary))]) {
    expect(again.contextHash, at).toBe(contextHash);
    expect(JSON.stringify(again.body), at).toBe(JSON.stringify(body));
  }
  return { context, body, contextHash };
}
