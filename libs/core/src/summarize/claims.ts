import { canonicalJson, canonicalJsonLength, compareText } from '../canonical.js';
import { invalidInput } from '../errors.js';
import type {
  ArtifactClaim,
  BoundaryQuery,
  Claims,
  Compaction,
  DispositionClaim,
  StateAtBoundary,
  Summary,
  SummaryInput,
} from '../model.js';
import { estimateTokens, tokensOfChars } from '../tokens.js';

// Claims as summarizers build them: from the log's state (strict), merged from lower-tier nodes
// (digests), carried forward from the prior frame, and always in one canonical order so that the
// node's bytes do not depend on how a summarizer happened to list them.

export const emptyClaims: Claims = {
  resolved: [],
  unresolved: [],
  dispositions: [],
  artifacts: [],
  constraints: [],
};

/** The claims with every list sorted by id, then seq, then content: a total, canonical order. */
export function normalizeClaims(claims: Claims): Claims {
  return {
    resolved: sortBy(claims.resolved, (c) => c.itemId),
    unresolved: sortBy(claims.unresolved, (c) => c.itemId),
    dispositions: sortBy(claims.dispositions, (c) => c.itemKey),
    artifacts: sortBy(claims.artifacts, (c) => c.path),
    constraints: sortBy(claims.constraints, (c) => c.itemId),
  };
}

/**
 * Every fact the check requires for the span, exactly as the log has it. Artifacts deleted in the span
 * are claimed too (the check does not require them): a later child's deletion must be able to overrule
 * an earlier child's creation when a digest merges them.
 */
export function claimsFromState(state: StateAtBoundary): Claims {
  return normalizeClaims({
    resolved: state.closed.flatMap((item) =>
      item.end?.type === 'closed'
        ? [
            {
              itemId: item.itemId,
              outcome: item.end.outcome,
              seq: item.end.seq,
              name: item.name,
              detail: item.detail,
              outcomeDetail: item.end.detail,
            },
          ]
        : [],
    ),
    unresolved: state.open.map((item) => ({
      itemId: item.itemId,
      kind: item.kind,
      name: item.name,
      seq: item.openedSeq,
      detail: item.detail,
      handle: item.handle,
      logPath: item.logPath,
    })),
    dispositions: state.disposed.map(dispositionClaim),
    artifacts: state.artifacts.map(artifactClaim),
    constraints: state.open
      .filter((item) => item.kind === 'constraint')
      .map((item) => ({ itemId: item.itemId, name: item.name, detail: item.detail, seq: item.openedSeq })),
  });
}

/**
 * The claims of a digest merged from its children, oldest first: closures and dispositions across the
 * whole span (a later disposition of a key replaces an earlier one), artifacts by their latest action,
 * and open items and constraints as the last child states them at the shared boundary. Correct
 * children give correct merged claims; a lossy child's losses carry over, and the check catches them.
 */
export function mergeClaims(nodes: readonly Compaction[]): Claims {
  const last = nodes.at(-1);
  if (last === undefined) return emptyClaims;
  const dispositions = new Map<string, DispositionClaim>();
  const artifacts = new Map<string, ArtifactClaim>();
  for (const node of nodes) {
    for (const claim of node.claims.dispositions) keepLatest(dispositions, claim.itemKey, claim);
    for (const claim of node.claims.artifacts) keepLatest(artifacts, claim.path, claim);
  }
  return normalizeClaims({
    resolved: nodes.flatMap((node) => node.claims.resolved),
    unresolved: last.claims.unresolved,
    dispositions: [...dispositions.values()],
    artifacts: [...artifacts.values()],
    constraints: last.claims.constraints,
  });
}

/**
 * The query a summarizer's state is read with: the span, plus the keys and paths the prior frame
 * claims from before it, so that those facts can be carried forward as the log has them now.
 */
export function summaryQuery(input: {
  readonly tenantId: string;
  readonly sessionId: string;
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly priorFrame: Compaction | null;
}): BoundaryQuery {
  const { priorFrame, fromSeq } = input;
  const before = <T extends { readonly seq: number }>(claims: readonly T[]): T[] =>
    claims.filter((c) => c.seq < fromSeq);
  return {
    tenantId: input.tenantId,
    sessionId: input.sessionId,
    fromSeq,
    toSeq: input.toSeq,
    itemIds: [],
    itemKeys: unique(before(priorFrame?.claims.dispositions ?? []).map((c) => c.itemKey)),
    paths: unique(before(priorFrame?.claims.artifacts ?? []).map((c) => c.path)),
  };
}

/**
 * The claims plus the prior frame's dispositions and artifacts from before the span, each as the log
 * has it at this boundary (a key disposed again, a file deleted since, is taken from the log, not from
 * the prior frame). This is what lets a node stand alone at resume: the check requires the span's
 * facts, and the prior frame brings the earlier ones.
 */
export function carryForward(claims: Claims, state: StateAtBoundary, priorFrame: Compaction | null): Claims {
  if (priorFrame === null) return claims;
  const keys = new Set(claims.dispositions.map((c) => c.itemKey));
  const paths = new Set([
    ...claims.artifacts.map((c) => c.path),
    ...state.artifacts.map((fact) => fact.path),
  ]);
  const dispositions = [...claims.dispositions];
  const artifacts = [...claims.artifacts];
  for (const claim of priorFrame.claims.dispositions) {
    const fact = state.lookup.dispositions.get(claim.itemKey);
    if (claim.seq >= state.fromSeq || keys.has(claim.itemKey) || fact === undefined) continue;
    keys.add(claim.itemKey);
    dispositions.push(dispositionClaim(fact));
  }
  for (const claim of priorFrame.claims.artifacts) {
    const fact = state.lookup.artifacts.get(claim.path);
    if (
      claim.seq >= state.fromSeq ||
      paths.has(claim.path) ||
      fact === undefined ||
      fact.action === 'deleted'
    )
      continue;
    paths.add(claim.path);
    artifacts.push(artifactClaim(fact));
  }
  return normalizeClaims({ ...claims, dispositions, artifacts });
}

/** A summary's size: its narrative plus its claims as canonical JSON. */
export function summaryOf(narrative: string, claims: Claims): Summary {
  return {
    narrative,
    claims,
    tokenCount: estimateTokens(narrative) + tokensOfChars(canonicalJsonLength(claims)),
  };
}

/** The span a summary input covers, checked: contiguous turns or same-tier nodes, matching the state. */
export function spanOf(input: SummaryInput): {
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly tier: number;
} {
  const { span, state } = input;
  let result: { fromSeq: number; toSeq: number; tier: number };
  switch (span.kind) {
    case 'turns': {
      const first = span.turns[0];
      if (first === undefined) throw invalidInput('a summary needs at least one turn');
      span.turns.forEach((turn, index) => {
        if (turn.seq !== first.seq + index) throw invalidInput(`turns are not contiguous at seq ${turn.seq}`);
      });
      result = { fromSeq: first.seq, toSeq: first.seq + span.turns.length - 1, tier: 1 };
      break;
    }
    case 'nodes': {
      const first = span.nodes[0];
      if (first === undefined) throw invalidInput('a digest needs at least one node');
      span.nodes.forEach((node, index) => {
        const previous = span.nodes[index - 1];
        if (node.tier !== first.tier) {
          throw invalidInput(`node ${node.compactionId} is L${node.tier}, not L${first.tier}`);
        }
        if (previous !== undefined && node.span.fromSeq !== previous.span.toSeq + 1) {
          throw invalidInput(`node ${node.compactionId} does not follow ${previous.compactionId}`);
        }
      });
      result = { fromSeq: first.span.fromSeq, toSeq: span.nodes.at(-1)!.span.toSeq, tier: first.tier + 1 };
      break;
    }
    default: {
      const never: never = span;
      throw invalidInput(`unknown span ${JSON.stringify(never)}`);
    }
  }
  if (state.fromSeq !== result.fromSeq || state.toSeq !== result.toSeq) {
    throw invalidInput(
      `state ${state.fromSeq}..${state.toSeq} is not the span ${result.fromSeq}..${result.toSeq}`,
    );
  }
  return result;
}

function dispositionClaim(fact: DispositionClaim): DispositionClaim {
  return {
    itemKey: fact.itemKey,
    disposition: fact.disposition,
    reason: fact.reason,
    supersededBy: fact.supersededBy,
    seq: fact.seq,
  };
}

function artifactClaim(fact: ArtifactClaim): ArtifactClaim {
  return { path: fact.path, action: fact.action, digest: fact.digest, seq: fact.seq };
}

function keepLatest<T extends { readonly seq: number }>(map: Map<string, T>, key: string, claim: T): void {
  const held = map.get(key);
  if (held === undefined || claim.seq >= held.seq) map.set(key, claim);
}

function sortBy<T extends { readonly seq: number }>(items: readonly T[], key: (item: T) => string): T[] {
  // The content breaks ties only (two claims of one id at one seq): encoded when one is met, not for
  // every claim, which cost a canonical encoding per claim per node (a profile's top core frame).
  const content = new Map<T, string>();
  const contentOf = (item: T): string => {
    let encoded = content.get(item);
    if (encoded === undefined) content.set(item, (encoded = canonicalJson(item)));
    return encoded;
  };
  return [...items]
    .map((item) => ({ item, key: key(item) }))
    .sort(
      (a, b) =>
        compareText(a.key, b.key) ||
        a.item.seq - b.item.seq ||
        compareText(contentOf(a.item), contentOf(b.item)),
    )
    .map(({ item }) => item);
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)].sort(compareText);
}
