import { contextIn, outputFormats, type OutputFormat } from '@tidemark/adapters';
import type { ResumeResult } from './outcomes.js';

// A resume in the format an agent runtime hands to its model API: `tidemark` is the context as it is
// ({role, content} messages); the others are a request body the provider accepts (@tidemark/adapters),
// with that format's own contextHash (the same marker and format always give the same bytes).

export const resumeFormats = ['tidemark', ...outputFormats] as const;
export type ResumeFormat = (typeof resumeFormats)[number];

/** A resume in a provider's format: the result without its tidemark messages, with the body instead. */
export type ProviderResume = Omit<ResumeResult, 'messages' | 'contextHash'> & {
  readonly format: OutputFormat;
  /** The part of the provider's request body that carries the context (messages, system, input …). */
  readonly body: unknown;
  readonly contextHash: string;
};

export function isResumeFormat(value: unknown): value is ResumeFormat {
  return typeof value === 'string' && (resumeFormats as readonly string[]).includes(value);
}

export function inFormat(result: ResumeResult, format: ResumeFormat): ResumeResult | ProviderResume {
  if (format === 'tidemark') return result;
  const { messages, contextHash: _tidemarkHash, ...rest } = result;
  const { body, contextHash } = contextIn(format, { messages });
  return { ...rest, format, body, contextHash };
}
