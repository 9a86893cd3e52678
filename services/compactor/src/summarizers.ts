import {
  createModelSummarizer,
  fetchTransport,
  narrativeSummarizer,
  strictSummarizer,
  type Summarizer,
} from '@tidemark/core';

// The summarizers a policy can name: the two deterministic ones of core, or a model endpoint's.

/** The summarizers policies name, made once each. */
export function summarizers(model: {
  readonly baseUrl?: string | undefined;
  readonly apiKey?: string | undefined;
}): (name: string) => Summarizer {
  const made = new Map<string, Summarizer>();
  return (name) => {
    let summarizer = made.get(name);
    if (summarizer === undefined) {
      summarizer = summarizerFor(name, model);
      made.set(name, summarizer);
    }
    return summarizer;
  };
}

/** The summarizer a policy names. */
export function summarizerFor(
  name: string,
  model: { readonly baseUrl?: string | undefined; readonly apiKey?: string | undefined } = {},
): Summarizer {
  if (name === 'strict') return strictSummarizer;
  if (name === 'narrative') return narrativeSummarizer;
  if (name.startsWith('model:')) {
    if (model.baseUrl === undefined) throw new Error(`SUMMARIZER=${name} needs MODEL_BASE_URL`);
    return createModelSummarizer(
      { baseUrl: model.baseUrl, model: name.slice('model:'.length), apiKey: model.apiKey ?? null },
      fetchTransport((url, init) => fetch(url, init)),
    );
  }
  throw new Error(`unknown summarizer ${name}: strict, narrative or model:<model>`);
}
