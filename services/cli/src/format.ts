import type { Compaction, MarkerDecision, RegressionDetected } from '@tidemark/core';
import type { ResumeOutcome } from '@tidemark/resume';
import { compressionTarget, probeClasses, type ProbedResume } from '@tidemark/scenarios';
import type { SessionJournal } from './journal.js';

// Plain-text reports for people: what happened to a session, and how it would resume. Pure functions
// of what was read, so the demo, `inspect` and the tests print the same thing.

const short = (id: string | null): string => (id === null ? '—' : `${id.slice(0, 12)}…`);
const span = (c: { span: { fromSeq: number; toSeq: number } }): string =>
  `turns ${c.span.fromSeq}–${c.span.toSeq}`;

export function describeDecision(decision: MarkerDecision, node: Compaction | undefined): string {
  const where =
    node === undefined ? `L${decision.depth} up to turn ${decision.toSeq}` : `L${node.tier} ${span(node)}`;
  const how =
    node === undefined ? '' : ` ${node.summarizer}${node.attempt > 0 ? ` (repair ${node.attempt})` : ''}`;
  if (decision.type === 'marker_emitted')
    return `✓ emitted  ${where}${how}  marker ${short(decision.markerId)}`;
  if (decision.cause === 'revoked') {
    // The detail names who revoked it and why; the id is the marker itself.
    const [revocation] = decision.violations;
    const why = revocation?.detail.slice(revocation.detail.indexOf(': ') + 2) ?? '';
    return `✗ revoked  ${where}${how}  marker ${short(decision.markerId)}: ${why}`;
  }
  const violations = decision.violations.map((v) => `${v.condition} [${v.ids.join(', ')}]`).join('; ');
  const cause = decision.cause === 'depth_change' ? 'invalidated (frame depth changed)' : 'invalid';
  return `✗ ${cause}  ${where}${how}  marker ${short(decision.markerId)}: ${violations}`;
}

/** A step the resumed agent started again, in one line: both turns, and what the resume covered. */
export function describeRegression(r: RegressionDetected): string {
  const args = r.detail === null ? '' : ` (${r.detail})`;
  const from = r.nodeId === null ? 'the raw checkpoint' : `node ${short(r.nodeId)}`;
  return `⚠ regression  turn ${r.seq} starts ${r.name}${args} again: ${r.ruledOut} at turn ${r.priorSeq} (${r.priorItemId}), before the boundary ${r.boundarySeq} of the resume from ${from} at turn ${r.resumedAtSeq}`;
}

export function describeCompactions(compactions: readonly Compaction[]): string {
  const tiers = new Map<number, { count: number; repairs: number; generations: Set<number> }>();
  for (const node of compactions) {
    const tier = tiers.get(node.tier) ?? { count: 0, repairs: 0, generations: new Set<number>() };
    tier.count += 1;
    if (node.attempt > 0) tier.repairs += 1;
    tier.generations.add(node.generation);
    tiers.set(node.tier, tier);
  }
  if (tiers.size === 0) return 'none yet';
  return [...tiers.entries()]
    .sort(([a], [b]) => a - b)
    .map(([tier, t]) => {
      const extras = [
        t.repairs > 0 ? `${t.repairs} repair${t.repairs === 1 ? '' : 's'}` : '',
        t.generations.size > 1 ? `generations ${[...t.generations].sort().join(', ')}` : '',
      ].filter((text) => text.length > 0);
      return `L${tier} ×${t.count}${extras.length > 0 ? ` (${extras.join(', ')})` : ''}`;
    })
    .join(', ');
}

export function describeResume(outcome: ResumeOutcome): string {
  if (!outcome.ok) return `not resumable yet: ${outcome.code} (${outcome.message})`;
  const { result } = outcome;
  const raw =
    result.rawToSeq < result.rawFromSeq
      ? 'no raw turns after it'
      : `raw turns ${result.rawFromSeq}–${result.rawToSeq}`;
  const from =
    result.mode === 'digest'
      ? `digest mode: node ${short(result.nodeId)} (marker ${short(result.markerId)}), then ${raw}`
      : result.nodeId === null
        ? `raw mode (${result.reason ?? 'fallback'}): the raw log, ${raw}`
        : `raw mode (${result.reason ?? 'fallback'}): checkpoint node ${short(result.nodeId)}, then ${raw}`;
  return `${from}; ${result.messages.length} messages; contextHash ${result.contextHash}`;
}

export interface SessionReportInput {
  readonly tenantId: string;
  readonly sessionId: string;
  readonly title?: string;
  readonly summarizer?: string;
  readonly turns: number;
  readonly journal: SessionJournal;
  readonly resume: ResumeOutcome;
  /** What a model could work from: the probe of the resume context, and its compression. */
  readonly probed?: ProbedResume;
  /** Steps the agent started again after a resume (the regressions topic). */
  readonly regressions?: readonly RegressionDetected[];
}

export function formatSessionReport(input: SessionReportInput): string {
  const nodes = new Map(input.journal.compactions.map((c) => [c.compactionId, c]));
  const heading = [
    `${input.tenantId}/${input.sessionId}`,
    input.title,
    input.summarizer && `summarizer: ${input.summarizer}`,
  ]
    .filter((part) => part !== undefined && part !== '')
    .join(' — ');
  const lines = [
    heading,
    `  turns: ${input.turns}`,
    `  compactions: ${describeCompactions(input.journal.compactions)}`,
    `  marker decisions (${input.journal.decisions.length}):`,
    ...input.journal.decisions.map((d) => `    ${describeDecision(d, nodes.get(d.compactionId))}`),
    ...(input.regressions === undefined
      ? []
      : [
          `  regressions (${input.regressions.length}):`,
          ...input.regressions.map((r) => `    ${describeRegression(r)}`),
        ]),
    `  resume: ${describeResume(input.resume)}`,
    ...(input.probed === undefined ? [] : [`  probe: ${describeProbe(input.probed)}`]),
  ];
  return lines.join('\n');
}

/** The probe in one line: the share answered, per class, and the compression with its judgement. */
export function describeProbe(probed: ProbedResume): string {
  const { probe } = probed;
  const classes = probeClasses
    .filter((c) => probe.byClass[c].asked > 0)
    .map((c) => `${c} ${probe.byClass[c].answered}/${probe.byClass[c].asked}`);
  const compression =
    probed.compression === null
      ? 'no digest (raw resume)'
      : `compression ${probed.compression.toFixed(3)}${probed.tooShort ? ` (too short for ${compressionTarget}: the digest stands for ${probed.coveredTokens} raw tokens)` : ''}`;
  const missed = probe.missed.length === 0 ? '' : `; missed ${probe.missed.join(', ')}`;
  return `${probe.score.toFixed(3)} of ${probe.asked} questions (${classes.join(', ')}) at ${compression}${missed}`;
}
