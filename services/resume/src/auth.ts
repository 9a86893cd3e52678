import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';

// Bearer tokens, each naming one tenant. Only SHA-256 digests of tokens are configured and held in
// memory; a presented token is hashed and compared against every digest in constant time (no early
// exit), so neither the comparison nor the scan order tells an attacker how close a guess was.

export interface TokenEntry {
  readonly tenantId: string;
  /** SHA-256 of the token, 32 bytes. */
  readonly digest: Buffer;
}

export type Authentication =
  | {
      readonly ok: true;
      readonly tenantId: string;
      /** Which token it was, for an audit trail: the first 16 hex digits of its SHA-256, never the token. */
      readonly tokenRef: string;
    }
  | { readonly ok: false; readonly reason: 'missing' | 'malformed' | 'unknown' };

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

const sha256Hex = z.string().regex(/^[0-9a-fA-F]{64}$/, 'a SHA-256 digest in hex (64 characters)');
const fileSchema = z.array(z.object({ tenantId: z.string().min(1), tokenSha256: sha256Hex }));

/** Parses `tenant:sha256hex,tenant:sha256hex` (RESUME_TOKENS, or another variable named). */
export function parseTokenList(value: string, variable = 'RESUME_TOKENS'): TokenEntry[] {
  return value
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.length > 0)
    .map((part) => {
      const at = part.lastIndexOf(':');
      const tenantId = part.slice(0, at);
      const hex = part.slice(at + 1);
      if (at <= 0 || !sha256Hex.safeParse(hex).success) {
        throw new Error(
          `${variable}: each entry must be tenant:sha256hex (hash a token with \`pnpm hash-token\`)`,
        );
      }
      return { tenantId, digest: Buffer.from(hex, 'hex') };
    });
}

/** Reads RESUME_TOKENS_FILE (or another variable's file): JSON `[{ "tenantId": "...", "tokenSha256": "<hex>" }]`. */
export function readTokenFile(path: string, variable = 'RESUME_TOKENS_FILE'): TokenEntry[] {
  const parsed = fileSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  if (!parsed.success) {
    throw new Error(
      `${variable} ${path}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  }
  return parsed.data.map((e) => ({ tenantId: e.tenantId, digest: Buffer.from(e.tokenSha256, 'hex') }));
}

/** The longest Authorization header read (a token is 32 to a few hundred characters). */
const maxAuthorizationLength = 4096;

export class TokenVerifier {
  private readonly entries: readonly TokenEntry[];

  constructor(entries: readonly TokenEntry[]) {
    this.entries = entries;
  }

  get size(): number {
    return this.entries.length;
  }

  /** Authenticates an Authorization header value (`Bearer <token>`). */
  authenticate(header: string | undefined): Authentication {
    if (header === undefined || header.length === 0) return { ok: false, reason: 'missing' };
    // Far longer than any token: refused before it is hashed.
    if (header.length > maxAuthorizationLength) return { ok: false, reason: 'malformed' };
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
    if (match === null) return { ok: false, reason: 'malformed' };
    const presented = createHash('sha256').update(match[1]!, 'utf8').digest();
    let tenantId: string | null = null;
    for (const entry of this.entries) {
      // Every entry is compared, a match does not stop the scan.
      if (timingSafeEqual(presented, entry.digest) && tenantId === null) tenantId = entry.tenantId;
    }
    if (tenantId === null) return { ok: false, reason: 'unknown' };
    return { ok: true, tenantId, tokenRef: presented.toString('hex').slice(0, 16) };
  }
}

/** The tokens the configuration names: RESUME_TOKENS, then the lines of RESUME_TOKENS_FILE. */
export function tokensFromConfig(config: {
  readonly RESUME_TOKENS?: string | undefined;
  readonly RESUME_TOKENS_FILE?: string | undefined;
}): TokenEntry[] {
  return [
    ...(config.RESUME_TOKENS === undefined ? [] : parseTokenList(config.RESUME_TOKENS)),
    ...(config.RESUME_TOKENS_FILE === undefined ? [] : readTokenFile(config.RESUME_TOKENS_FILE)),
  ];
}

/**
 * The operators' tokens (OPERATOR_TOKENS, then OPERATOR_TOKENS_FILE), in the same formats: each may
 * revoke its tenant's markers. They are separate from the resume tokens an agent runtime holds, so a
 * leaked runtime token cannot undo a compaction.
 */
export function operatorTokensFromConfig(config: {
  readonly OPERATOR_TOKENS?: string | undefined;
  readonly OPERATOR_TOKENS_FILE?: string | undefined;
}): TokenEntry[] {
  return [
    ...(config.OPERATOR_TOKENS === undefined
      ? []
      : parseTokenList(config.OPERATOR_TOKENS, 'OPERATOR_TOKENS')),
    ...(config.OPERATOR_TOKENS_FILE === undefined
      ? []
      : readTokenFile(config.OPERATOR_TOKENS_FILE, 'OPERATOR_TOKENS_FILE')),
  ];
}
