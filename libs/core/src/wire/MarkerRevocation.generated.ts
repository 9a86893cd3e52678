// Generated from schemas/*.avsc by `pnpm exec tsx schemas/codegen.ts`. Do not edit: change the schemas and regenerate.
// Wire shapes as the codec decodes them: longs as numbers, bytes as Uint8Array, nullable fields as
// T | null, unions of variant records as unions discriminated on `type`.

/**
 * An operator's request to stop trusting an emitted marker (an undo of a compaction). Published to
 * the revocations topic by the resume service's revoke endpoint, keyed by tenantId/sessionId; the
 * validator decides it through its decision path and publishes a MarkerInvalid with cause revoked.
 * Its id is derived from the session and the marker alone, so revoking a marker twice is one
 * revocation. It carries no wall-clock time.
 */
export interface MarkerRevocation {
  /** Content-derived: sha256 of the session and the marker id (core revocationIdOf). */
  readonly revocationId: string;
  /** The tenant that owns the session. */
  readonly tenantId: string;
  /** The session. */
  readonly sessionId: string;
  /** The marker to revoke. */
  readonly markerId: string;
  /** Why the marker is revoked, as the operator wrote it. */
  readonly reason: string;
  /**
   * Who asked, for the audit: `operator:` and the first 16 hex digits of the SHA-256 of the
   * operator token used (never the token).
   */
  readonly requestedBy: string;
}
