import { compareText } from './canonical.js';
import { invalidInput } from './errors.js';
import type {
  ArtifactClaim,
  ArtifactFact,
  BoundaryQuery,
  Claims,
  Compaction,
  ConstraintClaim,
  DispositionClaim,
  DispositionFact,
  Frame,
  ItemEnd,
  ItemFact,
  ResolvedClaim,
  UnresolvedClaim,
  StateAtBoundary,
  Violation,
  ViolationCondition,
} from './model.js';

// The check: is a marker candidate valid? The conditions of design.md, all of them, every time. Behind
// all of them one principle: every fact the next action depends on is claimed (completeness, against
// the span lists of the state), and every claim is true of the log (truth, against the lookups). A
// missing fact and a false fact are both violations, reported with the ids. The result depends only on
// the sets of claims, never on their order: failures are keyed by id and sorted.

/** What the check needs of a candidate; a Compaction is one. */
export type CheckCandidate = Pick<
  Compaction,
  'compactionId' | 'tenantId' | 'sessionId' | 'tier' | 'span' | 'claims' | 'marker'
>;

export interface CheckOptions {
  /** The artifacts condition, an extension of the specification; on unless switched off. */
  readonly artifacts?: boolean;
}

/** The order violations are reported in. */
export const conditionOrder: readonly ViolationCondition[] = [
  'closure',
  'retention',
  'depth',
  'artifacts',
  'unverifiable',
];

/**
 * The violations of a marker candidate for the given frame and state, one per failing condition in
 * conditionOrder, each with every failing id sorted. Empty means valid.
 */
export function check(
  candidate: CheckCandidate,
  frame: Frame,
  state: StateAtBoundary,
  options: CheckOptions = {},
): Violation[] {
  const { tenantId, sessionId, span } = candidate;
  if (
    state.tenantId !== tenantId ||
    state.sessionId !== sessionId ||
    state.fromSeq !== span.fromSeq ||
    state.toSeq !== span.toSeq
  ) {
    throw invalidInput(
      `state for ${state.tenantId}/${state.sessionId} ${state.fromSeq}..${state.toSeq} does not answer ` +
        `${tenantId}/${sessionId} ${span.fromSeq}..${span.toSeq}`,
    );
  }
  const failures = new Failures();
  depth(candidate, frame, failures);
  if (state.appliedSeq < span.toSeq) {
    // Never decide on missing state: the other conditions cannot be evaluated, so they are not guessed.
    failures.add(
      'unverifiable',
      candidate.compactionId,
      `state applied up to #${state.appliedSeq}, boundary at #${span.toSeq}`,
    );
    return failures.violations();
  }
  closure(candidate.claims, state, failures);
  retention(candidate.claims, state, failures);
  if (options.artifacts ?? true) artifacts(candidate.claims, state, failures);
  return failures.violations();
}

/** The query whose answer check() needs for this candidate: its span and everything it claims. */
export function boundaryQuery(
  candidate: Pick<Compaction, 'tenantId' | 'sessionId' | 'span' | 'claims'>,
): BoundaryQuery {
  const { claims } = candidate;
  return {
    tenantId: candidate.tenantId,
    sessionId: candidate.sessionId,
    fromSeq: candidate.span.fromSeq,
    toSeq: candidate.span.toSeq,
    itemIds: sortedUnique([
      ...claims.resolved.map((c) => c.itemId),
      ...claims.unresolved.map((c) => c.itemId),
      ...claims.constraints.map((c) => c.itemId),
    ]),
    itemKeys: sortedUnique(claims.dispositions.map((c) => c.itemKey)),
    paths: sortedUnique(claims.artifacts.map((c) => c.path)),
  };
}

// --- closure: every open item is UNRESOLVED, every item closed in the span is resolved with its outcome;
// no item is claimed resolved while open (a synthetic result) or UNRESOLVED once ended (stale).
function closure(claims: Claims, state: StateAtBoundary, failures: Failures): void {
  const unresolved = new Set(claims.unresolved.map((c) => c.itemId));
  const resolved = new Set(claims.resolved.map((c) => c.itemId));
  for (const item of state.open) {
    if (!unresolved.has(item.itemId)) {
      failures.add('closure', item.itemId, `open since #${item.openedSeq}, not marked UNRESOLVED`);
    }
  }
  for (const item of state.closed) {
    if (!resolved.has(item.itemId)) {
      failures.add('closure', item.itemId, `${ended(item.end)}, not claimed resolved`);
    }
  }
  for (const claim of claims.resolved) {
    const why = falseResolved(claim, state.lookup.items.get(claim.itemId), state.toSeq);
    if (why !== null) failures.add('closure', claim.itemId, why);
  }
  for (const claim of claims.unresolved) {
    const why = falseUnresolved(claim, state.lookup.items.get(claim.itemId), state.toSeq);
    if (why !== null) failures.add('closure', claim.itemId, why);
  }
}

// --- retention: every key disposed in the span is claimed with the same disposition (and the same
// supersededBy); no disposition is claimed that the log does not have; every active constraint is
// claimed as active and nothing else is (a superseded item presented as current).
function retention(claims: Claims, state: StateAtBoundary, failures: Failures): void {
  const claimedKeys = new Set(claims.dispositions.map((c) => c.itemKey));
  for (const fact of state.disposed) {
    if (!claimedKeys.has(fact.itemKey)) {
      failures.add('retention', fact.itemKey, `${disposal(fact)} at #${fact.seq}, missing from dispositions`);
    }
  }
  for (const claim of claims.dispositions) {
    const why = falseDisposition(claim, state.lookup.dispositions.get(claim.itemKey), state.toSeq);
    if (why !== null) failures.add('retention', claim.itemKey, why);
  }
  const claimedConstraints = new Set(claims.constraints.map((c) => c.itemId));
  for (const item of state.open) {
    if (item.kind === 'constraint' && !claimedConstraints.has(item.itemId)) {
      failures.add(
        'retention',
        item.itemId,
        `active constraint since #${item.openedSeq}, missing from constraints`,
      );
    }
  }
  for (const claim of claims.constraints) {
    const why = falseConstraint(claim, state.lookup.items.get(claim.itemId), state.toSeq);
    if (why !== null) failures.add('retention', claim.itemId, why);
  }
}

// --- depth: the marker points at the frame's depth. A re-compaction that changed the frame depth
// invalidates every marker pointing elsewhere.
function depth(candidate: CheckCandidate, frame: Frame, failures: Failures): void {
  const { marker, tier, compactionId } = candidate;
  if (marker.depth !== frame.depth) {
    failures.add(
      'depth',
      compactionId,
      `marker at L${marker.depth}, frame at L${frame.depth} (node ${frame.nodeId})`,
    );
  }
  if (marker.depth !== tier) {
    failures.add('depth', compactionId, `marker at L${marker.depth} for a node at L${tier}`);
  }
}

// --- artifacts: every artifact created or modified in the span and standing at the boundary is
// claimed with its latest action; no artifact claim contradicts the log.
function artifacts(claims: Claims, state: StateAtBoundary, failures: Failures): void {
  const claimedPaths = new Set(claims.artifacts.map((c) => c.path));
  for (const fact of state.artifacts) {
    if (fact.action !== 'deleted' && !claimedPaths.has(fact.path)) {
      failures.add('artifacts', fact.path, `${fact.action} at #${fact.seq}, missing from artifacts`);
    }
  }
  for (const claim of claims.artifacts) {
    const why = falseArtifact(claim, state.lookup.artifacts.get(claim.path), state.toSeq);
    if (why !== null) failures.add('artifacts', claim.path, why);
  }
}

// Each claim against what the log has for it at the boundary: why the claim is false, or null if true.

function falseResolved(claim: ResolvedClaim, item: ItemFact | undefined, toSeq: number): string | null {
  const said = `claimed resolved ${claim.outcome} at #${claim.seq}`;
  if (item === undefined) return `${said}, but the log never opened it by #${toSeq}`;
  if (item.end === null) return `${said}, but it is still open at #${toSeq}`;
  const { end } = item;
  if (end.type !== 'closed' || end.outcome !== claim.outcome || end.seq !== claim.seq) {
    return `${said}, but the log says ${ended(end)}`;
  }
  // Names and details are optional here (nodes written before them have none), but one stated is a fact.
  return misstated(claim, { name: item.name, detail: item.detail, outcomeDetail: end.detail }, (claimed) =>
    claimed === null ? 'unstated' : 'stated',
  );
}

function falseUnresolved(claim: UnresolvedClaim, item: ItemFact | undefined, toSeq: number): string | null {
  const said = `claimed UNRESOLVED (${claim.kind} opened at #${claim.seq})`;
  if (item === undefined) return `${said}, but the log never opened it by #${toSeq}`;
  if (item.end !== null) return `${said}, but it ${ended(item.end)}`;
  if (item.kind !== claim.kind || item.openedSeq !== claim.seq) {
    return `${said}, but the log has ${item.kind} opened at #${item.openedSeq}`;
  }
  // How a resumed agent reaches an open item again (handle, log) must be the log's, a missing one
  // included; its detail may be left out (a constraint's is in constraints), but one stated is a fact.
  return misstated(
    claim,
    { name: item.name, detail: item.detail, handle: item.handle, logPath: item.logPath },
    (claimed, field) => (field === 'detail' && claimed === null ? 'unstated' : 'stated'),
  );
}

/**
 * The first field whose claimed value is not the log's, as a reason, or null. A field the `rule` calls
 * `unstated` (a null the claim may leave out) is not compared.
 */
function misstated<K extends string>(
  claim: Readonly<Record<NoInfer<K>, string | null>>,
  log: Readonly<Record<K, string | null>>,
  rule: (claimed: string | null, field: K) => 'stated' | 'unstated',
): string | null {
  for (const field of Object.keys(log) as K[]) {
    const claimed = claim[field];
    if (rule(claimed, field) === 'stated' && claimed !== log[field]) {
      return `claimed ${field} ${quoted(claimed)}, but the log has ${quoted(log[field])}`;
    }
  }
  return null;
}

function quoted(value: string | null): string {
  return value === null ? 'none' : JSON.stringify(value);
}

function falseDisposition(
  claim: DispositionClaim,
  fact: DispositionFact | undefined,
  toSeq: number,
): string | null {
  const said = `claimed ${disposal(claim)} at #${claim.seq}`;
  if (fact === undefined) return `${said}, but the log has no disposition of it by #${toSeq}`;
  if (
    fact.disposition !== claim.disposition ||
    fact.supersededBy !== claim.supersededBy ||
    fact.seq !== claim.seq
  ) {
    return `${said}, but the log has ${disposal(fact)} at #${fact.seq}`;
  }
  return null;
}

function falseConstraint(claim: ConstraintClaim, item: ItemFact | undefined, toSeq: number): string | null {
  const said = `claimed an active constraint opened at #${claim.seq}`;
  if (item === undefined || item.kind !== 'constraint') {
    return `${said}, but the log has no such constraint by #${toSeq}`;
  }
  if (item.end !== null) return `${said}, but it ${ended(item.end)}`;
  if (item.openedSeq !== claim.seq) return `${said}, but the log opened it at #${item.openedSeq}`;
  return null;
}

function falseArtifact(claim: ArtifactClaim, fact: ArtifactFact | undefined, toSeq: number): string | null {
  const said = `claimed ${claim.action} at #${claim.seq} (${claim.digest ?? 'no digest'})`;
  if (fact === undefined) return `${said}, but the log never recorded it by #${toSeq}`;
  if (fact.action !== claim.action || fact.digest !== claim.digest || fact.seq !== claim.seq) {
    return `${said}, but the log has ${fact.action} at #${fact.seq} (${fact.digest ?? 'no digest'})`;
  }
  return null;
}

function ended(end: ItemEnd | null): string {
  if (end === null) return 'open';
  switch (end.type) {
    case 'closed':
      return `closed ${end.outcome} at #${end.seq}`;
    case 'disposed':
      return `${end.disposition} at #${end.seq}`;
    default: {
      const never: never = end;
      return String(never);
    }
  }
}

function disposal(fact: { readonly disposition: string; readonly supersededBy: string | null }): string {
  return fact.supersededBy === null ? fact.disposition : `${fact.disposition} by ${fact.supersededBy}`;
}

/** Failures per condition and id; the reasons for one id are deduplicated and sorted. */
class Failures {
  readonly #byCondition = new Map<ViolationCondition, Map<string, Set<string>>>();

  add(condition: ViolationCondition, id: string, reason: string): void {
    let ids = this.#byCondition.get(condition);
    if (ids === undefined) this.#byCondition.set(condition, (ids = new Map<string, Set<string>>()));
    let reasons = ids.get(id);
    if (reasons === undefined) ids.set(id, (reasons = new Set<string>()));
    reasons.add(reason);
  }

  violations(): Violation[] {
    return conditionOrder.flatMap((condition) => {
      const failing = this.#byCondition.get(condition);
      if (failing === undefined) return [];
      const ids = [...failing.keys()].sort(compareText);
      const detail = ids
        .map((id) => `${id}: ${[...failing.get(id)!].sort(compareText).join('; ')}`)
        .join(' | ');
      return [{ condition, ids, detail }];
    });
  }
}

function sortedUnique(values: readonly string[]): string[] {
  return [...new Set(values)].sort(compareText);
}
