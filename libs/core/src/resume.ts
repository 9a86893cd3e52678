import { canonicalJson } from './canonical.js';
import { invalidInput } from './errors.js';
import { contextHashOf } from './ids.js';
import type { Compaction, ResumeContext, ResumeMessage, ResumePlan, TurnEvent } from './model.js';
import { rawTurnText, spanLabel, stateBlock } from './summarize/render.js';

// The resume context (where it starts is the session decider's `resumePlan`). A marker is trusted
// wholesale or discarded wholesale: the resume path never repairs a summary (repair happens in the
// compactor, while the raw log is resident), and never mixes a distrusted node with patches from the
// raw log.

/**
 * The context an agent resumes with, assembled canonically: the node's narrative and state block as one
 * system message (when the plan starts from a node), then every raw turn after it, in order, as chat
 * messages. `turns` must be exactly the session's turns from plan.rawFromSeq on, contiguous.
 */
export function buildResumeContext(input: {
  readonly plan: ResumePlan;
  readonly node: Compaction | null;
  readonly turns: readonly TurnEvent[];
}): ResumeContext {
  const { plan, node, turns } = input;
  const nodeId = planNodeId(plan);
  if ((node?.compactionId ?? null) !== nodeId) {
    throw invalidInput(
      `the plan starts from ${nodeId ?? 'the session start'}, not from ${node?.compactionId ?? 'no node'}`,
    );
  }
  turns.forEach((turn, index) => {
    if (
      turn.tenantId !== plan.tenantId ||
      turn.sessionId !== plan.sessionId ||
      turn.seq !== plan.rawFromSeq + index
    ) {
      throw invalidInput(
        `raw turns must be ${plan.tenantId}/${plan.sessionId} from #${plan.rawFromSeq} on, contiguous`,
      );
    }
  });
  const messages: ResumeMessage[] = [];
  if (node !== null) {
    const header = `Tidemark resume context: L${node.tier} node ${node.compactionId}, ${spanLabel(node.span.fromSeq, node.span.toSeq)}.`;
    const content = [
      header,
      node.narrative,
      `State at turn ${node.span.toSeq}:`,
      stateBlock(node.claims),
    ].join('\n\n');
    messages.push({ role: 'system', content });
  }
  messages.push(...turnMessages(turns));
  // The mode is left out: the same node and turns are the same context whichever way it was reached.
  const canonical = canonicalJson({
    kind: 'tidemark.resume-context',
    tenantId: plan.tenantId,
    sessionId: plan.sessionId,
    nodeId,
    rawFromSeq: plan.rawFromSeq,
    messages,
  });
  return { plan, messages, canonical, contextHash: contextHashOf(canonical) };
}

/** The compaction a plan starts from: the marker's node (digest), the checkpoint's node or null (raw). */
export function planNodeId(plan: ResumePlan): string | null {
  switch (plan.mode) {
    case 'digest':
      return plan.marker.compactionId;
    case 'raw':
      return plan.checkpoint.compactionId;
    default: {
      const never: never = plan;
      throw invalidInput(`unknown plan ${JSON.stringify(never)}`);
    }
  }
}

/** Raw turns as resume messages: each turn's role and text (and its original, when it kept one). */
export function turnMessages(turns: readonly TurnEvent[]): ResumeMessage[] {
  return turns.map((turn) => {
    const { role, original } = turn;
    const content = rawTurnText(turn);
    // Absent rather than null: a context of turns written as TurnEvents keeps its bytes.
    return original === null || original === undefined ? { role, content } : { role, content, original };
  });
}
