// Reading untyped JSON values, as every adapter and checker does: a transcript or a body is whatever the
// caller gives, so each field is looked at before it is trusted.

/** A JSON object as a transcript holds it: any field may be missing or of any type. */
export type JsonRecord = Readonly<Record<string, unknown>>;

/** A JSON object (not null, not a list). */
export function isRecord(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isList(value: unknown): value is readonly unknown[] {
  return Array.isArray(value);
}

export function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

/** A non-empty string, else null. */
export function text(value: unknown): string | null {
  return isNonEmptyString(value) ? value : null;
}

/** The JSON value a text holds, or undefined when it is not JSON. */
export function parseJson(json: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return undefined;
  }
}
