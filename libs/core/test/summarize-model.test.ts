import { describe, expect, it } from 'vitest';
import {
  check,
  createModelSummarizer,
  fetchTransport,
  summaryQuery,
  TidemarkCoreError,
  type ChatCompletionRequest,
  type ChatCompletionResponse,
  type ChatTransport,
  type SummaryInput,
  type TurnEvent,
} from '../src/index.js';
import { artifact, closed, disposed, fold, frameAt, l1, opened, stateFor, turn } from './helpers.js';

// The model summarizer against a mock of the hosted chat-completions endpoint: the mock records each
// request and answers what the test says, so no network is involved.

function mockHostedEndpoint(
  answer: (request: ChatCompletionRequest) => ChatCompletionResponse | Error,
): ChatTransport & {
  requests: ChatCompletionRequest[];
} {
  const requests: ChatCompletionRequest[] = [];
  const transport = (request: ChatCompletionRequest): Promise<ChatCompletionResponse> => {
    requests.push(request);
    const response = answer(request);
    return response instanceof Error ? Promise.reject(response) : Promise.resolve(response);
  };
  return Object.assign(transport, { requests });
}

const completion = (content: unknown): ChatCompletionResponse => ({
  status: 200,
  body: JSON.stringify({
    id: 'cmpl-1',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: typeof content === 'string' ? content : JSON.stringify(content),
        },
      },
    ],
  }),
});

const session: TurnEvent[] = [
  turn(1, 'user', 'Migrate the users table; keep it reversible.', [
    opened('c-rev', 'constraint', 'reversible', 'the migration be reversible'),
  ]),
  turn(2, 'assistant', 'Dry run of add-column-then-backfill.', [
    opened('call-dry', 'tool_call', 'run_migration', '--dry-run'),
  ]),
  turn(3, 'tool', 'dry run failed: lock timeout', [closed('call-dry', 'error')]),
  turn(4, 'user', 'Then not that approach.', [
    disposed('approach:add-column-backfill', 'rejected', 'failed dry run; the user rejected it'),
  ]),
  turn(5, 'assistant', 'Wrote the rollback script.', [
    artifact('migrations/003_down.sql', 'created', 'sha256:down'),
  ]),
];
const input: SummaryInput = {
  span: { kind: 'turns', turns: session },
  state: fold(session).stateAt(
    summaryQuery({
      tenantId: session[0]!.tenantId,
      sessionId: session[0]!.sessionId,
      fromSeq: 1,
      toSeq: 5,
      priorFrame: null,
    }),
  ),
  priorFrame: null,
  budget: 50,
};
const faithful = {
  narrative:
    'The user asked for a reversible migration; the add-column-then-backfill approach failed its dry run and was rejected; a rollback script exists.',
  claims: {
    resolved: [{ itemId: 'call-dry', outcome: 'error', seq: 3 }],
    unresolved: [{ itemId: 'c-rev', kind: 'constraint', name: 'reversible', seq: 1 }],
    dispositions: [
      {
        itemKey: 'approach:add-column-backfill',
        disposition: 'rejected',
        reason: 'failed dry run',
        supersededBy: null,
        seq: 4,
      },
    ],
    artifacts: [{ path: 'migrations/003_down.sql', action: 'created', digest: 'sha256:down', seq: 5 }],
    constraints: [{ itemId: 'c-rev', name: 'reversible', detail: 'the migration be reversible', seq: 1 }],
  },
};
const config = { baseUrl: 'https://llm.example.test/v1/', model: 'summarizer-1', apiKey: 'sk-test' };

describe('the model summarizer', () => {
  it('asks the hosted endpoint for JSON narrative and claims, deterministically', async () => {
    const endpoint = mockHostedEndpoint(() => completion(faithful));
    const summarizer = createModelSummarizer(config, endpoint);
    await summarizer.summarize(input);
    const [request] = endpoint.requests;
    expect(summarizer.name).toBe('model:summarizer-1');
    expect(request).toMatchObject({
      url: 'https://llm.example.test/v1/chat/completions',
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
    });
    const body = JSON.parse(request!.body) as {
      model: string;
      temperature: number;
      response_format: unknown;
      messages: { role: string; content: string }[];
    };
    expect(body).toMatchObject({
      model: 'summarizer-1',
      temperature: 0,
      response_format: { type: 'json_object' },
    });
    expect(body.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(body.messages[1]!.content).toContain('#4 user: Then not that approach.');
    expect(body.messages[1]!.content).toContain('approach:add-column-backfill');
  });

  it('sends no authorization header when there is no key', async () => {
    const endpoint = mockHostedEndpoint(() => completion(faithful));
    await createModelSummarizer({ ...config, apiKey: null }, endpoint).summarize(input);
    expect(endpoint.requests[0]!.headers).not.toHaveProperty('authorization');
  });

  it('returns the parsed narrative and claims, in canonical order, which the check then accepts', async () => {
    const reordered = {
      ...faithful,
      claims: { ...faithful.claims, unresolved: [...faithful.claims.unresolved].reverse() },
    };
    const summary = await createModelSummarizer(
      config,
      mockHostedEndpoint(() => completion(reordered)),
    ).summarize(input);
    expect(summary.narrative.length).toBeLessThanOrEqual(200);
    const candidate = l1(session, 1, 5, { summarize: () => summary });
    expect(check(candidate, frameAt(1), stateFor(session, candidate))).toEqual([]);
  });

  it('is checked, never trusted: a model that folds the rejection into prose fails retention', async () => {
    const fluent = { ...faithful, claims: { ...faithful.claims, dispositions: [] } };
    const summary = await createModelSummarizer(
      config,
      mockHostedEndpoint(() => completion(fluent)),
    ).summarize(input);
    const candidate = l1(session, 1, 5, { summarize: () => summary });
    expect(
      check(candidate, frameAt(1), stateFor(session, candidate)).map((v) => [v.condition, v.ids]),
    ).toEqual([['retention', ['approach:add-column-backfill']]]);
  });

  it('cuts a narrative over budget to the budget', async () => {
    const summary = await createModelSummarizer(
      config,
      mockHostedEndpoint(() => completion({ ...faithful, narrative: 'x'.repeat(1000) })),
    ).summarize(input);
    expect(summary.narrative.length).toBeLessThanOrEqual(200);
  });

  it('says what is missing when the response has no message content', async () => {
    const summarize = createModelSummarizer(
      config,
      mockHostedEndpoint(() => ({ status: 200, body: '{"choices":[]}' })),
    ).summarize(input);
    await expect(summarize).rejects.toThrow(/choices\[0\]\.message\.content is not a string/);
  });

  it.each([
    ['a body that is not JSON', { status: 200, body: '<html>' }],
    ['no choices', { status: 200, body: '{"choices":[]}' }],
    ['content that is not JSON', completion('Sure! Here is the summary: ...')],
    ['content in a code fence', completion('```json\n{}\n```')],
    ['a missing narrative', completion({ claims: faithful.claims })],
    [
      'a missing claim list',
      completion({ narrative: 'n', claims: { ...faithful.claims, artifacts: undefined } }),
    ],
    [
      'an unknown disposition',
      completion({
        ...faithful,
        claims: {
          ...faithful.claims,
          dispositions: [{ ...faithful.claims.dispositions[0], disposition: 'abandoned' }],
        },
      }),
    ],
    [
      'a seq that is not an integer',
      completion({
        ...faithful,
        claims: { ...faithful.claims, resolved: [{ itemId: 'call-dry', outcome: 'error', seq: '3' }] },
      }),
    ],
    [
      'an empty item id',
      completion({
        ...faithful,
        claims: { ...faithful.claims, resolved: [{ itemId: '', outcome: 'error', seq: 3 }] },
      }),
    ],
  ])('fails with model_malformed on %s, never guessing', async (_name, response) => {
    const summarize = createModelSummarizer(
      config,
      mockHostedEndpoint(() => response),
    ).summarize(input);
    await expect(summarize).rejects.toThrow(TidemarkCoreError);
    await expect(summarize).rejects.toMatchObject({ code: 'model_malformed', retriable: false });
  });

  it.each([
    [
      'claims.dispositions[0].disposition is not one of rejected, failed, superseded',
      'disposition',
      'abandoned',
    ],
    ['claims.dispositions[0].seq is not a seq', 'seq', 0],
    ['claims.dispositions[0].itemKey is not a non-empty string', 'itemKey', ''],
  ])('names the field that breaks the schema: %s', async (message, field, value) => {
    const response = completion({
      ...faithful,
      claims: {
        ...faithful.claims,
        dispositions: [{ ...faithful.claims.dispositions[0], [field]: value }],
      },
    });
    const summarize = createModelSummarizer(
      config,
      mockHostedEndpoint(() => response),
    ).summarize(input);
    await expect(summarize).rejects.toThrow(message);
  });

  it.each([
    [500, true],
    [503, true],
    [429, true],
    [400, false],
    [401, false],
  ])('fails with model_http on status %i (retriable: %s)', async (status, retriable) => {
    const summarize = createModelSummarizer(
      config,
      mockHostedEndpoint(() => ({ status, body: 'nope' })),
    ).summarize(input);
    await expect(summarize).rejects.toMatchObject({ code: 'model_http', retriable });
  });

  it('fails with a retriable model_transport, keeping the cause, when the endpoint cannot be reached', async () => {
    const cause = new Error('ECONNREFUSED');
    const summarize = createModelSummarizer(
      config,
      mockHostedEndpoint(() => cause),
    ).summarize(input);
    await expect(summarize).rejects.toMatchObject({ code: 'model_transport', retriable: true, cause });
  });
});

describe('fetchTransport', () => {
  it('adapts a fetch function to the transport', async () => {
    const calls: unknown[] = [];
    const transport = fetchTransport((url, init) => {
      calls.push([url, init]);
      return Promise.resolve({ status: 200, text: () => Promise.resolve('{"ok":true}') });
    });
    const response = await transport({
      url: 'https://x.test/chat/completions',
      method: 'POST',
      headers: { a: 'b' },
      body: '{}',
    });
    expect(response).toEqual({ status: 200, body: '{"ok":true}' });
    expect(calls).toEqual([
      ['https://x.test/chat/completions', { method: 'POST', headers: { a: 'b' }, body: '{}' }],
    ]);
  });
});
