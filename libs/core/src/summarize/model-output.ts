import {
  ArtifactActionSymbols,
  DispositionSymbols,
  ItemKindSymbols,
  ItemOutcomeSymbols,
} from '../wire/index.generated.js';

// The model summarizer's HTTP contract, the part a model must honour: the JSON object its message
// content holds. One JSON Schema (draft 2020-12), built from the wire enums, so the document
// (docs/model-summarizer.md) and the parser (parseChatResponse, which names the first field that breaks
// it) cannot drift from the schemas.

const seq = { type: 'integer', minimum: 1, description: 'The L0 seq of the turn the fact is at.' };
const id = { type: 'string', minLength: 1 };
const nullableText = { type: ['string', 'null'] };
const reach = {
  type: ['string', 'null'],
  description: 'Copied from the log; null, or left out, only when the log has none (else the check fails).',
};
/** A claim's object: every field required but the nullable ones (absent reads as null). */
const claim = (properties: Record<string, unknown>) => ({
  type: 'object',
  required: Object.keys(properties).filter(
    (key) => properties[key] !== nullableText && properties[key] !== reach,
  ),
  properties,
});

/** The JSON Schema of a model summarizer's output (the message content, parsed). */
export const modelOutputSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://tidemark.dev/schemas/model-summarizer-output.json',
  title: 'Tidemark model summarizer output',
  type: 'object',
  required: ['narrative', 'claims'],
  properties: {
    narrative: { type: 'string', description: "Prose within the node's narrative token budget." },
    claims: {
      type: 'object',
      required: ['resolved', 'unresolved', 'dispositions', 'artifacts', 'constraints'],
      properties: {
        resolved: {
          type: 'array',
          items: claim({
            itemId: id,
            outcome: { enum: [...ItemOutcomeSymbols] },
            seq,
            name: nullableText,
            detail: nullableText,
            outcomeDetail: nullableText,
          }),
        },
        unresolved: {
          type: 'array',
          items: claim({
            itemId: id,
            kind: { enum: [...ItemKindSymbols] },
            name: { type: 'string' },
            seq,
            detail: nullableText,
            handle: reach,
            logPath: reach,
          }),
        },
        dispositions: {
          type: 'array',
          items: claim({
            itemKey: id,
            disposition: { enum: [...DispositionSymbols] },
            reason: { type: 'string' },
            supersededBy: nullableText,
            seq,
          }),
        },
        artifacts: {
          type: 'array',
          items: claim({ path: id, action: { enum: [...ArtifactActionSymbols] }, digest: nullableText, seq }),
        },
        constraints: {
          type: 'array',
          items: claim({ itemId: id, name: { type: 'string' }, detail: nullableText, seq }),
        },
      },
    },
  },
} as const;
