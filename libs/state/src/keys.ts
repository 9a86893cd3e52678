import { readFileSync } from 'node:fs';
import { sessionKey } from '@tidemark/core';

// Every Redis key Tidemark writes is built here. Each store's keys start with the configured prefix and
// the store's name; a session's keys carry the hash tag `{tenant/session}`, so one session's keys (in
// every store) share a Redis Cluster slot and one Lua script may touch them all atomically.
//
//   store        lifecycle (epoch, lock)                 session keys
//   projection   proj:epoch:6, proj:lock                 proj:{t/s}:<part>, proj:stalled (below)
//   frames       frames:epoch:4, frames:lock             frame:{t/s}, decided:{t/s}, frame-seen:{t/s}
//   plans        resume:epoch:4, resume:rebuild-lock     resume:{t/s}, resume-nodes:{t/s}, resume-ctx:{t/s},
//                                                        resume-seen:{t/s}
//   windows      cmp:<ns>:epoch:5, cmp:<ns>:lock         cmp:<ns>:{t/s}
//   watches      (none: not rebuilt, see watches.ts)     watch:{t/s}
//
// Epoch keys name the layout's version (`:3`): a store built by an older layout reads as absent and is
// rebuilt from the topics. 3: `{` and `}` in ids are escaped in the hash tag (stalled index added). 4: the
// session decider's state names the markers an operator revoked.
// Windows 4: a window names its nodes, whose bodies are in the session's `nodes` hash. Windows 5: one
// hash per session holds the window, its turns and its nodes. Projection 4:
// early turns are parked (`parked`), a stall is meta's `stalledAt`, and a turn's position is in `turns`
// with its content hash (no `pos`). Projection 5: the watermark is HLEN turns (no `meta.applied`), and a
// close is told from a disposition by its end (no `closed`). Projection 6: an ended item's openedSeq
// is indexed (`endedopen`), so a boundary read long after it (a reader behind the materializer) fetches
// only the items open at the boundary, not every item opened and ended since.

/** A session's key in a store: `<prefix><store>:{tenant/session}`. */
export function sessionStoreKey(prefix: string, store: string, ref: SessionRef): string {
  return `${prefix}${store}:${sessionTag(ref)}`;
}

/** A SCAN pattern matching every session key of a store (and nothing else under the prefix). */
export function sessionKeysPattern(prefix: string, store: string): string {
  return `${escapeGlob(`${prefix}${store}`)}:\\{*`;
}

/** A session, as every store addresses it. */
export interface SessionRef {
  readonly tenantId: string;
  readonly sessionId: string;
}

/** Where a rebuildable store keeps its lifecycle (see store-lifecycle.ts); one per store, below. */
export interface StoreLayout {
  /** The epoch: absent = lost, never built, or built by an older version (the key names its version). */
  readonly epochKey: string;
  /** The lock one rebuilder holds. */
  readonly lockKey: string;
  /** SCAN patterns matching every key of the store's state (its sessions' keys, an index of them) and nothing else. */
  readonly statePatterns: readonly string[];
}

/** The version of the key layout and stored shapes, in every epoch key (see the top of this file). */
const layoutVersion = 4;
/** The windows' own: 5 since one hash per session holds the window, its turns and its nodes. */
const windowsLayoutVersion = 5;
/** The projection's own: 6 since ended items are indexed by openedSeq (see the top of this file). */
const projectionLayoutVersion = 6;

export const projectionLayout = (prefix: string): StoreLayout => ({
  epochKey: `${prefix}proj:epoch:${projectionLayoutVersion}`,
  lockKey: `${prefix}proj:lock`,
  statePatterns: [sessionKeysPattern(prefix, 'proj'), escapeGlob(stalledIndexKey(prefix))],
});

export const framesLayout = (prefix: string): StoreLayout => ({
  epochKey: `${prefix}frames:epoch:${layoutVersion}`,
  lockKey: `${prefix}frames:lock`,
  statePatterns: ['frame', 'decided', 'frame-seen'].map((store) => sessionKeysPattern(prefix, store)),
});

export const plansLayout = (prefix: string): StoreLayout => ({
  epochKey: `${prefix}resume:epoch:${layoutVersion}`,
  lockKey: `${prefix}resume:rebuild-lock`,
  statePatterns: ['resume', 'resume-nodes', 'resume-ctx', 'resume-seen'].map((store) =>
    sessionKeysPattern(prefix, store),
  ),
});

/** The compactor's windows of one namespace (generation and policy). */
export const windowsLayout = (prefix: string, namespace: string): StoreLayout => ({
  epochKey: `${prefix}cmp:${namespace}:epoch:${windowsLayoutVersion}`,
  lockKey: `${prefix}cmp:${namespace}:lock`,
  statePatterns: [sessionKeysPattern(prefix, `cmp:${namespace}`)],
});

// The projection's keys, in full:
//
//   <prefix>proj:epoch:6                   string  the projection's epoch; absent = lost, never built or older
//   <prefix>proj:rebuilding                string  JSON {epoch, reason, since}: a rebuild is under way
//   <prefix>proj:stalled                   zset    the session's meta key by since (ms): stalled sessions
//   <prefix>proj:{tenant/session}:meta     hash    brokenSeq, brokenReason, brokenAt, parked (count),
//                                                  stalledAt (ms; absent: not stalled)
//   <prefix>proj:{tenant/session}:turns    hash    seq -> "<content hash>|<partition:offset in turns.l0>":
//                                                  the turns applied, 1..n, so HLEN is the watermark
//   <prefix>proj:{tenant/session}:items    hash    itemId -> item JSON, as opened
//   <prefix>proj:{tenant/session}:ends     hash    itemId -> end JSON
//   <prefix>proj:{tenant/session}:open     zset    itemId by openedSeq (open now)
//   <prefix>proj:{tenant/session}:ended    zset    itemId by end seq
//   <prefix>proj:{tenant/session}:endedopen zset   itemId by openedSeq, for the ended items only (below)
//   <prefix>proj:{tenant/session}:disp     zset    "<index>|<fact>" by seq (dispositions in a span)
//   <prefix>proj:{tenant/session}:dispkey  zset    lexicographic "<key prefix><seq><index>|<fact>" (latest per key)
//   <prefix>proj:{tenant/session}:art      zset    as disp, for artifacts
//   <prefix>proj:{tenant/session}:artkey   zset    as dispkey, for artifact paths
//   <prefix>proj:{tenant/session}:skipped  hash    seq -> the turn's skipped changes (told again on redelivery)
//   <prefix>proj:{tenant/session}:parked   hash    seq -> "<hash>|<partition:offset>[|r]": early turns

/** A session's projection keys, in the order projection-apply-turns.lua takes them as KEYS. */
const sessionParts = [
  'meta',
  'turns',
  'items',
  'ends',
  'open',
  'ended',
  'disp',
  'dispkey',
  'art',
  'artkey',
  'skipped',
  'parked',
  'endedopen',
] as const;

/** projection-state-at.lua's KEYS: what a boundary's state is read from, and turns for the watermark. */
const stateAtParts = sessionParts.filter(
  (part) => part !== 'meta' && part !== 'skipped' && part !== 'parked',
);

export type SessionKeys = Readonly<Record<(typeof sessionParts)[number], string>>;

/** The KEYS of projection-apply-turns.lua. */
export const applyScriptKeys = (keys: SessionKeys): string[] => sessionParts.map((part) => keys[part]);

/** The KEYS of projection-state-at.lua. */
export const stateAtScriptKeys = (keys: SessionKeys): string[] => stateAtParts.map((part) => keys[part]);

/**
 * The Redis hash tag of a session: every key of one session carries it, so they share a Cluster slot
 * and one script may touch them all. Braces in the ids are percent-encoded (`%` already is, by
 * sessionKey, so this stays injective): a `}` would end the tag early, and `{}` leave none at all.
 */
export function sessionTag(ref: SessionRef): string {
  const key = sessionKey(ref.tenantId, ref.sessionId);
  return `{${/[{}]/.test(key) ? key.replace(/\{/g, '%7B').replace(/\}/g, '%7D') : key}}`;
}

/** A Lua script of `libs/state/lua/`, by file name (loaded once per store, with defineCommand). */
export function luaScript(name: string): string {
  return readFileSync(new URL(`../lua/${name}.lua`, import.meta.url), 'utf8');
}

export function sessionKeys(prefix: string, tenantId: string, sessionId: string): SessionKeys {
  const base = `${sessionStoreKey(prefix, 'proj', { tenantId, sessionId })}:`;
  return Object.fromEntries(sessionParts.map((part) => [part, `${base}${part}`])) as SessionKeys;
}

/**
 * The projection's index of stalled sessions (waiting for a turn past their watermark), kept beside the
 * sessions' own marks: not in any session's slot, so written by its own command, never by a script.
 */
export const stalledIndexKey = (prefix: string): string => `${prefix}proj:stalled`;

/** The projection's mark of a rebuild under way (beside its lifecycle: readers wait while it is set). */
export const rebuildingKey = (prefix: string): string => `${prefix}proj:rebuilding`;

/** `text` matched literally in a SCAN/KEYS pattern. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\{}^-]/g, (c) => `\\${c}`);
}

// --- the members of the sorted-set indexes ---------------------------------------------------------

const pad = (value: number, width: number): string => String(value).padStart(width, '0');

/**
 * A span-index member: the change's index in its turn, then the fact. Scored by seq; within one seq,
 * members sort by the padded index, i.e. in the turn's order.
 */
export function spanMember(index: number, factJson: string): string {
  return `${pad(index, 6)}|${factJson}`;
}

/**
 * A lookup-index member (all scored 0, ordered lexicographically): the key's length and the key (so
 * no key's members interleave with another's), the seq, the change's index, then the fact. The latest
 * fact of a key at or before a seq is one ZREVRANGEBYLEX ... LIMIT 0 1 away.
 */
export function lookupMember(key: string, seq: number, index: number, factJson: string): string {
  return `${lookupPrefix(key)}${pad(seq, 16)}${pad(index, 6)}|${factJson}`;
}

/** ZREVRANGEBYLEX bounds (max, min) for a key's latest member at or before `toSeq`. */
export function lookupBounds(key: string, toSeq: number): [max: string, min: string] {
  const prefix = lookupPrefix(key);
  return [`(${prefix}${pad(toSeq + 1, 16)}`, `[${prefix}`];
}

function lookupPrefix(key: string): string {
  return `${pad(key.length, 10)}${key}`;
}

/** The fact JSON of an index member (everything after the first `|` past the fixed-width head). */
export function memberFact(member: string): string {
  return member.slice(member.indexOf('|', 0) + 1);
}

/** The fact JSON of a lookup member: after the key prefix, the seq and the index. */
export function lookupMemberFact(member: string): string {
  const keyLength = Number(member.slice(0, 10));
  return member.slice(10 + keyLength + 16 + 6 + 1);
}

/** A stable service instance's last group member id (members.ts): `<prefix>member:<group>:<instance>`. */
export function memberKey(prefix: string, groupId: string, instanceId: string): string {
  return `${prefix}member:${groupId}:${instanceId}`;
}
