import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hashToken, parseTokenList, readTokenFile, TokenVerifier } from '../src/auth.js';

describe('bearer tokens', () => {
  const verifier = new TokenVerifier(
    parseTokenList(`tenant-a:${hashToken('alpha')}, tenant-b:${hashToken('beta')}`),
  );

  it('names the tenant of a configured token', () => {
    // tokenRef names the token in an audit trail by its hash, never the token itself.
    expect(verifier.authenticate('Bearer alpha')).toEqual({
      ok: true,
      tenantId: 'tenant-a',
      tokenRef: hashToken('alpha').slice(0, 16),
    });
    expect(verifier.authenticate('bearer beta')).toEqual({
      ok: true,
      tenantId: 'tenant-b',
      tokenRef: hashToken('beta').slice(0, 16),
    });
  });

  it('refuses a missing, malformed or unknown token', () => {
    expect(verifier.authenticate(undefined)).toEqual({ ok: false, reason: 'missing' });
    expect(verifier.authenticate('Basic YWxwaGE=')).toEqual({ ok: false, reason: 'malformed' });
    expect(verifier.authenticate('Bearer alpha beta')).toEqual({ ok: false, reason: 'malformed' });
    expect(verifier.authenticate('Bearer gamma')).toEqual({ ok: false, reason: 'unknown' });
    // The configured hash itself is not a token.
    expect(verifier.authenticate(`Bearer ${hashToken('alpha')}`)).toEqual({ ok: false, reason: 'unknown' });
  });

  it('reads tokens from a JSON file of hashes, and refuses plain tokens in the configuration', () => {
    const dir = mkdtempSync(join(tmpdir(), 'resume-tokens-'));
    const file = join(dir, 'tokens.json');
    writeFileSync(file, JSON.stringify([{ tenantId: 'tenant-c', tokenSha256: hashToken('gamma') }]));
    expect(new TokenVerifier(readTokenFile(file)).authenticate('Bearer gamma')).toEqual({
      ok: true,
      tenantId: 'tenant-c',
      tokenRef: hashToken('gamma').slice(0, 16),
    });
    writeFileSync(file, JSON.stringify([{ tenantId: 'tenant-c', tokenSha256: 'gamma' }]));
    expect(() => readTokenFile(file)).toThrow(/tokenSha256/);
    expect(() => parseTokenList('tenant-a:alpha')).toThrow(/tenant:sha256hex/);
  });

  it('hashes a token to the SHA-256 hex digest', () => {
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
