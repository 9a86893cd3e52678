import { isList, isRecord } from './json.js';

// Anthropic content blocks as both directions of the adapter (anthropic.ts reads a transcript,
// anthropic-resume.ts writes a request body) and the checker read them.

/** A content block as a transcript holds it: only its `type` is trusted before it is looked at. */
export type Block = { readonly type: string } & Readonly<Record<string, unknown>>;

export function isBlock(value: unknown): value is Block {
  return isRecord(value) && typeof value.type === 'string';
}

/** A tool result's text: a string, or its text blocks in order (other blocks by their type). */
export function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!isList(content)) return '';
  return content
    .map((part) =>
      isBlock(part) && part.type === 'text' && typeof part.text === 'string'
        ? part.text
        : `[${isBlock(part) ? part.type : 'unrecognized block'}]`,
    )
    .join('\n');
}

/** Not text, or only white space: what the API refuses as a text block. */
export function isBlank(text: unknown): boolean {
  return typeof text !== 'string' || text.trim().length === 0;
}
