import { readFileSync } from 'node:fs';
import { modelOutputSchema } from '@tidemark/core';
import { describe, expect, it } from 'vitest';

// The model summarizer's contract is documented as a JSON Schema; the page and the schema the parser
// follows are the same object, so neither can drift from the other.

describe('docs/model-summarizer.md', () => {
  it('holds exactly the JSON Schema the model summarizer checks every response against', () => {
    const doc = readFileSync(new URL('../docs/model-summarizer.md', import.meta.url), 'utf8');
    const block = /```json\n([\s\S]*?)\n```/.exec(doc);
    expect(block).not.toBeNull();
    expect(JSON.parse(block![1]!)).toEqual(modelOutputSchema);
  });
});
