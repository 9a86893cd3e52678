import { readFileSync } from 'node:fs';
import { sessionKey } from '@tidemark/core';
// The projection's Redis key layout. Every key starts with the configured prefix; a session's keys carry
// the hash tag `{tenant/session}` (the same tag as the validator's frame keys), so one session's keys share
// a Redis Cluster slot and one Lua script may touch them all atomically.
//
//   <prefix>proj:epoch                     string  the projection's epoch; absent = lost or never built
//   <prefix>proj:rebuilding                string  JSON {epoch, reason, since}: a rebuild is under way
//   <prefix>proj:{tenant/session}:meta     hash    applied (watermark), brokenSeq, brokenReason
//   <prefix>proj:{tenant/session}:turns    hash    seq -> turnId
//   <prefix>proj:{tenant/session}:pos      hash    seq -> "partition:offset" in turns.l0
//   <prefix>proj:{tenant/session}:items    hash    itemId -> item JSON, as opened
//   <prefix>proj:{tenant/session}:ends     hash    itemId -> end JSON
//   <prefix>proj:{tenant/session}:open     zset    itemId by openedSeq (open now)
//   <prefix>proj:{tenant/session}:ended    zset    itemId by end seq
//   <prefix>proj:{tenant/session}:closed   zset    itemId by close seq
//   <prefix>proj:{tenant/session}:disp     zset    "<index>|<fact>" by seq (dispositions in a span)
//   <prefix>proj:{tenant/session}:dispkey  zset    lexicographic "<key prefix><seq><index>|<fact>" (latest per key)
//   <prefix>proj:{tenant/session}:art      zset    as disp, for artifacts
//   <prefix>proj:{tenant/session}:artkey   zset    as dispkey, for artifact paths
//   <prefix>proj:{tenant/session}:skipped  hash    seq -> the turn's skipped changes (told again on redelivery)

export interface SessionKeys {
  readonly meta: string;
  readonly turns: string;
  readonly pos: string;
  readonly items: string;
  readonly ends: string;
  readonly open: string;
  readonly ended: string;
  readonly closed: string;
  readonly disp: string;
  readonly dispkey: string;
  readonly art: string;
  readonly artkey: string;
  readonly skipped: string;
}

/**
 * The Redis hash tag of a session: every key of one session carries it, so they share a Cluster slot
 * and one script may touch them all.
 */
export function sessionTag(ref: { readonly tenantId: string; readonly sessionId: string }): string {
  return `{${sessionKey(ref.tenantId, ref.sessionId)}}`;
}

/** A Lua script of `libs/state/lua/`, by file name (loaded once per store, with defineCommand). */
export function luaScript(name: string): string {
  return readFileSync(new URL(`../lua/${name}.lua`, import.meta.url), 'utf8');
}

export function sessionKeys(prefix: string, tenantId: string, sessionId: string): SessionKeys {
  const base = `${prefix}proj:${sessionTag({ tenantId, sessionId })}:`;
  return {
    meta: `${base}meta`,
    turns: `${base}turns`,
    pos: `${base}pos`,
    items: `${base}items`,
    ends: `${base}ends`,
    open: `${base}open`,
    ended: `${base}ended`,
    closed: `${base}closed`,
    disp: `${base}disp`,
    dispkey: `${base}dispkey`,
    art: `${base}art`,
    artkey: `${base}artkey`,
    skipped: `${base}skipped`,
  };
}

export const epochKey = (prefix: string): string => `${prefix}proj:epoch`;
export const rebuildingKey = (prefix: string): string => `${prefix}proj:rebuilding`;

/** A SCAN pattern matching every session key of the projection (and nothing else under the prefix). */
export function sessionKeyPattern(prefix: string): string {
  return `${escapeGlob(prefix)}proj:\\{*`;
}

/** `text` matched literally in a SCAN/KEYS pattern. */
export function escapeGlob(text: string): string {
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
