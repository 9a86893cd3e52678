import { compactorConfigSchema } from '@tidemark/compactor';
import { materializerConfigSchema } from '@tidemark/materializer';
import { resumeConfigSchema } from '@tidemark/resume';
import { parseConfig } from '@tidemark/service';
import { validatorConfigSchema } from '@tidemark/validator';
import { describe, expect, it } from 'vitest';

// Kafka consumer groups are cluster-wide: two deployments (or test runs) on one broker, told apart by
// their topic prefix, must not share a group, or one's partitions go to a member that never reads them.

const groups = (env: Record<string, string>) => [
  parseConfig(materializerConfigSchema, env).MATERIALIZER_GROUP_ID,
  parseConfig(compactorConfigSchema, env).GROUP_ID,
  parseConfig(validatorConfigSchema, env).VALIDATOR_GROUP_ID,
  parseConfig(resumeConfigSchema, env).RESUME_GROUP_ID,
];

describe("every service's consumer group", () => {
  it('is the plain service group with no prefix', () => {
    expect(groups({})).toEqual([
      'tidemark-materializer',
      'tidemark-compactor',
      'tidemark-validator',
      'tidemark-resume',
    ]);
  });

  it('is named after the topic prefix, so deployments on one broker never share a group', () => {
    expect(groups({ TOPIC_PREFIX: 'staging.' })).toEqual([
      'staging.tidemark-materializer',
      'staging.tidemark-compactor',
      'staging.tidemark-validator',
      'staging.tidemark-resume',
    ]);
  });

  it('can still be set explicitly', () => {
    expect(
      parseConfig(validatorConfigSchema, { TOPIC_PREFIX: 'a.', VALIDATOR_GROUP_ID: 'mine' })
        .VALIDATOR_GROUP_ID,
    ).toBe('mine');
  });
});
