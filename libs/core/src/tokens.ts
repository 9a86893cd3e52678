// A deterministic token estimate: about four characters per token for English prose and code. It is
// not any model's tokenizer; it only has to be the same everywhere, so budgets decide the same way.

export function estimateTokens(text: string): number {
  return tokensOfChars(text.length);
}

/** The estimate for a text of this many characters, when the text itself need not be built. */
export function tokensOfChars(chars: number): number {
  return Math.ceil(chars / 4);
}

/** The text, cut with an ellipsis if needed so that estimateTokens(result) <= budget. */
export function fitToBudget(text: string, budget: number): string {
  if (estimateTokens(text) <= budget) return text;
  const maxChars = Math.max(0, Math.floor(budget) * 4);
  if (maxChars === 0) return '';
  let cut = maxChars - 1;
  // Never split a surrogate pair: a lone surrogate is not valid UTF-8 downstream.
  const last = text.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut -= 1;
  return `${text.slice(0, cut).trimEnd()}…`;
}
