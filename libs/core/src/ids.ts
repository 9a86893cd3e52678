import { hash } from 'node:crypto';
import { canonicalJson } from './canonical.js';
import type { Policy, TurnEvent } from './model.js';

// Content-derived ids: SHA-256 (hex) over the canonical JSON of what identifies the thing, with a `kind`
// that keeps the id spaces apart. Replaying the same L0 under the same policy gives the same ids, so a
// duplicate is recognisable and harmless downstream.

/**
 * SHA-256 (hex) of bytes, or of a string's UTF-8 encoding: node:crypto's, the one module the core may
 * import (hashing is deterministic and does no I/O).
 */
export function sha256Hex(input: Uint8Array | string): string {
  // One-shot (Node ≥ 20.12): no Hash object per call; every turn the materializer applies is hashed.
  return hash('sha256', input, 'hex');
}

export interface CompactionIdentity {
  readonly tenantId: string;
  readonly sessionId: string;
  readonly tier: number;
  readonly generation: number;
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly policyId: string;
  /** 0 for the first compaction of a span; a repair must not collide with the node it repairs. */
  readonly attempt: number;
}

/**
 * A session's key, `tenant/session` (each id escaped: see keyPart): the Kafka record key on every topic (so a session's events share a
 * partition), the Redis hash tag of its keys, and the map key services group a batch by.
 */
export function sessionKey(tenantId: string, sessionId: string): string {
  return `${keyPart(tenantId)}/${keyPart(sessionId)}`;
}

/**
 * An id as it stands in a session key: `%` and `/` percent-encoded, so that no two sessions share a key
 * (tenant `a` with session `x/s`, and tenant `a/x` with session `s`); an id without either is itself,
 * so the keys of such sessions are what they always were.
 */
function keyPart(id: string): string {
  return /[%/]/.test(id) ? id.replace(/%/g, '%25').replace(/\//g, '%2F') : id;
}

/**
 * The compaction id. L0 offsets are left out on purpose: they are positions in one broker's topic,
 * while seqs are the session's own, so ids survive a topic being re-created.
 */
export function compactionIdOf(identity: CompactionIdentity): string {
  const { tenantId, sessionId, tier, generation, fromSeq, toSeq, policyId, attempt } = identity;
  return sha256Hex(
    canonicalJson({
      kind: 'tidemark.compaction',
      tenantId,
      sessionId,
      tier,
      generation,
      fromSeq,
      toSeq,
      policyId,
      attempt,
    }),
  );
}

export function markerIdOf(compactionId: string): string {
  return sha256Hex(canonicalJson({ kind: 'tidemark.marker', compactionId }));
}

/**
 * A revocation's id: the session and the marker alone (not the reason, nor who asked), so that revoking
 * one marker twice is one revocation.
 */
export function revocationIdOf(ref: { tenantId: string; sessionId: string; markerId: string }): string {
  const { tenantId, sessionId, markerId } = ref;
  return sha256Hex(canonicalJson({ kind: 'tidemark.revocation', tenantId, sessionId, markerId }));
}

export function policyIdOf(policy: Policy): string {
  return sha256Hex(canonicalJson({ kind: 'tidemark.policy', policy }));
}

/**
 * What a turn says, hashed: everything but its turnId and timestamp, which a runtime may mint afresh when
 * it sends the same turn again. Two turns of one session and seq with the same hash are one turn (a
 * redelivery); with different hashes, a conflict.
 */
export function turnContentHash(turn: TurnEvent): string {
  const { tenantId, sessionId, seq, role, content, tokenCount, changes } = turn;
  const original = turn.original ?? null;
  // A fixed array of the fields (strings encoded natively), and canonical JSON only for the nested ones:
  // the materializer hashes every turn it applies, and a canonical encoding of the whole turn was a
  // visible share of its CPU.
  return sha256Hex(
    JSON.stringify([
      'tidemark.turn-content',
      tenantId,
      sessionId,
      seq,
      role,
      content,
      tokenCount,
      changes.length === 0 ? '[]' : canonicalJson(changes),
      original === null ? null : canonicalJson(original),
    ]),
  );
}

/** The hash of a resume context's canonical encoding. */
export function contextHashOf(canonical: string): string {
  return sha256Hex(canonical);
}
