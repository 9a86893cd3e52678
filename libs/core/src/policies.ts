import { TidemarkCoreError } from './errors.js';
import { sessionKey } from './ids.js';
import type { Policy } from './model.js';
import { definePolicy } from './plan.js';

// Per-session compaction policies: a configured policy plus overrides for particular sessions or
// tenants (the POLICY_OVERRIDES variable). Every service that needs to know a session's policy (the
// compactor cuts by it; the resume service tells when a compaction is overdue by it) reads the same
// variable the same way, through these two functions.

/** The configured policy, each override as a whole policy over it, and the lookup of a session's. */
export interface Policies {
  readonly base: Policy;
  /** Each override as a whole policy (the configured one with the override's fields), checked. */
  readonly overrides: Readonly<Record<string, Policy>>;
  /** A session's own entry (`tenant/session`), else its tenant's, else the configured policy. */
  readonly policyFor: (ref: { readonly tenantId: string; readonly sessionId: string }) => Policy;
}

/**
 * Parses policy overrides: a JSON object `{"tenant/session": {...}, "tenant": {...}}`, each value a
 * (partial) policy. Throws `invalid_policy` when the text is not a JSON object of objects; the values
 * are checked by policiesFrom.
 */
export function parsePolicyOverrides(raw: string): Record<string, Partial<Policy>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    throw new TidemarkCoreError('invalid_policy', `not a JSON object of policies: ${String(error)}`, {
      cause: error,
    });
  }
  if (!isObject(parsed)) {
    throw new TidemarkCoreError('invalid_policy', 'not a JSON object of policies: not an object');
  }
  for (const [key, value] of Object.entries(parsed)) {
    if (!isObject(value))
      throw new TidemarkCoreError('invalid_policy', `${key}: a policy must be a JSON object`);
  }
  return parsed as Record<string, Partial<Policy>>;
}

/**
 * The configured policy and the overrides over it, each checked by definePolicy. Throws
 * `invalid_policy` naming the override's key when one is out of range.
 */
export function policiesFrom(
  base: Policy,
  overrides: Readonly<Record<string, Partial<Policy>>> = {},
): Policies {
  const checked = definePolicy(base);
  const whole = Object.fromEntries(
    Object.entries(overrides).map(([key, values]) => {
      try {
        return [key, definePolicy({ ...checked, ...values })];
      } catch (error) {
        throw new TidemarkCoreError('invalid_policy', `${key}: ${(error as Error).message}`, {
          cause: error,
        });
      }
    }),
  );
  return {
    base: checked,
    overrides: whole,
    policyFor: ({ tenantId, sessionId }) =>
      whole[sessionKey(tenantId, sessionId)] ?? whole[tenantId] ?? checked,
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
