import { defaultPolicy, definePolicy } from '@tidemark/core';
import { ConfigError, parseConfig } from '@tidemark/service';
import { describe, expect, it } from 'vitest';
import { compactorConfigSchema, policiesOf, policyOf } from '../src/config.js';
import { namespaceOf } from '../src/engine.js';

describe('the compactor configuration', () => {
  it("runs core's default policy, generation 1 and one strict repair when nothing is set", () => {
    const config = parseConfig(compactorConfigSchema, {});
    expect(policyOf(config)).toEqual(defaultPolicy);
    expect(config).toMatchObject({ GENERATION: 1, MAX_REPAIRS: 1, SUMMARIZER: 'strict' });
  });

  it('reads every policy field, "none" as no bound', () => {
    const config = parseConfig(compactorConfigSchema, {
      L1_EVERY_TURNS: '10',
      L1_TOKEN_BUDGET: '900',
      DIGEST_FAN_IN: '2',
      DIGEST_TOKEN_BUDGET: 'none',
      MAX_DEPTH: '3',
      NARRATIVE_TOKEN_BUDGET: '200',
      SUMMARIZER: 'narrative',
    });
    expect(policyOf(config)).toEqual(
      definePolicy({
        l1EveryTurns: 10,
        l1TokenBudget: 900,
        digestFanIn: 2,
        digestTokenBudget: null,
        maxDepth: 3,
        narrativeTokenBudget: 200,
        summarizer: 'narrative',
      }),
    );
  });

  it('fails fast naming the variable', () => {
    expect(() => parseConfig(compactorConfigSchema, { DIGEST_FAN_IN: '1' })).toThrow(ConfigError);
    expect(() => parseConfig(compactorConfigSchema, { L1_EVERY_TURNS: 'often' })).toThrow(/L1_EVERY_TURNS/);
  });

  it("gives a session its own override, else its tenant's, else the configured policy", () => {
    const config = parseConfig(compactorConfigSchema, {
      L1_EVERY_TURNS: '20',
      POLICY_OVERRIDES: JSON.stringify({ 't/s1': { digestFanIn: 2 }, t: { summarizer: 'narrative' } }),
    });
    const { policyFor, base } = policiesOf(config);
    expect(policyFor({ tenantId: 't', sessionId: 's1' })).toEqual(
      definePolicy({ l1EveryTurns: 20, digestFanIn: 2 }),
    );
    expect(policyFor({ tenantId: 't', sessionId: 's2' })).toEqual(
      definePolicy({ l1EveryTurns: 20, summarizer: 'narrative' }),
    );
    expect(policyFor({ tenantId: 'u', sessionId: 's1' })).toBe(base);
    expect(() =>
      policiesOf(parseConfig(compactorConfigSchema, { POLICY_OVERRIDES: '{"t":{"digestFanIn":1}}' })),
    ).toThrow(/POLICY_OVERRIDES: t: policy.digestFanIn/);
    expect(() => parseConfig(compactorConfigSchema, { POLICY_OVERRIDES: '[1]' })).toThrow(/POLICY_OVERRIDES/);
  });

  it('keeps the windows of each generation and policy apart', () => {
    const base = namespaceOf(1, defaultPolicy);
    expect(namespaceOf(1, definePolicy())).toBe(base);
    expect(namespaceOf(2, defaultPolicy)).not.toBe(base);
    expect(namespaceOf(1, definePolicy({ digestTokenBudget: 1000 }))).not.toBe(base);
    expect(namespaceOf(1, defaultPolicy, { t: definePolicy({ digestFanIn: 2 }) })).not.toBe(base);
  });
});
