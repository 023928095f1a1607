// Runs the Code nodes of writer.json, lookup.json and the email writers as
// n8n runs them ("Run Once for All Items": $input.all(), return an array
// of items), and the email writers' expressions on the providers'
// documented answers, outside n8n. Run: node --test examples/n8n/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const here = new URL('.', import.meta.url);
const require = createRequire(import.meta.url);

function codeNode(file, name) {
  const wf = JSON.parse(readFileSync(new URL(file, here), 'utf8'));
  const node = wf.nodes.find((n) => n.name === name);
  assert.ok(node, `${file}: no node ${name}`);
  // eslint-disable-next-line no-new-func
  const fn = new Function('$input', 'require', node.parameters.jsCode);
  return (items) => fn({ all: () => items }, require);
}

const writer = codeNode('writer.json', 'Compute key and hash');
const lookup = codeNode('lookup.json', 'Map to matches');

// Computed by ledger.PayloadHashOf in Go.
const GO_HASH_1842 = '883cffae65378b08196d4daa5d9ea4fac5e1c4c3fab05c9cc8918a51a9f4be2b';
const GO_HASH_KELVIN_7 = 'a0d1429c0da8276bbe97bd85939eb19461da2ebbeab9b48c2975685909a5756c';

test('writer: one item per order, from a webhook body, a batch, or the order itself', () => {
  const out = writer([
    { json: { headers: {}, query: {}, body: [{ id: 1842, email: '  Jane.Doe@Example.com ' }, { id: 7, email: '\u212Aate@example.com' }] } },
    { json: { body: { id: 3, email: 'c@example.com' } } },
    { json: { id: 4, email: 'd@example.com' } },
  ]).map((i) => i.json);
  assert.deepEqual(out.map((o) => o.op_key), ['order-1842-receipt', 'order-7-receipt', 'order-3-receipt', 'order-4-receipt']);
  assert.equal(out[0].recipient, 'jane.doe@example.com');
  assert.equal(out[0].payload_hash, GO_HASH_1842);
  assert.deepEqual(JSON.parse(out[0].payload), { to: 'jane.doe@example.com', subject: 'Receipt 1842', template: 'receipt-v3' });
  // ASCII lower-casing only, as sweeper compares: the Kelvin sign stays.
  assert.equal(out[1].recipient, '\u212Aate@example.com');
  assert.equal(out[1].payload_hash, GO_HASH_KELVIN_7);
});

test('writer: an order without an email stops the run before anything is claimed', () => {
  assert.throws(() => writer([{ json: { body: [{ id: 1, email: 'a@example.com' }, { id: 2 }] } }]), /an order needs an id and an email/);
});

const response = (statusCode, body) => [{ json: { statusCode, headers: {}, body } }];

test('lookup: records become matches hashed as the writer hashed them', () => {
  const sent = { id: 'msg_1', to: ' Jane.Doe@EXAMPLE.com', subject: 'Receipt 1842', template: 'receipt-v3', sent_at: '2026-11-29T10:00:03Z' };
  const out = lookup(response(200, [sent]));
  assert.deepEqual(out, [{ json: { matches: [
    { id: 'msg_1', created_at: '2026-11-29T10:00:03Z', recipient: 'jane.doe@example.com', payload_hash: GO_HASH_1842 },
  ] } }]);
});

test('lookup: a search that ran and found nothing answers an empty list', () => {
  assert.deepEqual(lookup(response(200, [])), [{ json: { matches: [] } }]);
});

test('lookup: anything but one list-of-messages response throws (the error output answers 503)', () => {
  assert.throws(() => lookup([]), /expected one search response, got 0/);
  assert.throws(() => lookup([...response(200, []), ...response(200, [])]), /got 2/);
  assert.throws(() => lookup(response(200, { messages: [] })), /did not answer a list/);
  assert.throws(() => lookup(response(200, '[]')), /did not answer a list/);
  assert.throws(() => lookup(response(500, [])), /did not answer a list/);
});

// --- The email writers (postmark-writer.json, mailgun-writer.json,
// sendgrid-writer.json) ---

// Computed by ledger.PayloadHashOf in Go: {"subject": "Receipt 1842"}, and
// what providertest.SubjectHash gives the adapters for that subject.
const GO_SUBJECT_HASH_1842 = '3f328cee39902df2969b5ea60ff0cd181690b4cb87ec8694da6151cb26dc9414';
const GO_SUBJECT_HASH_7 = '32ead065324a41cc00bf5383ab555ded4cb9d146d0d0b68746a9a428aa6edf5d';

function nodeOf(file, name) {
  const wf = JSON.parse(readFileSync(new URL(file, here), 'utf8'));
  const node = wf.nodes.find((n) => n.name === name);
  assert.ok(node, `${file}: no node ${name}`);
  return node;
}

// expression evaluates an n8n parameter that is one expression,
// "={{ … }}", with $json and $('Compute key and hash').item.json given.
function expression(value, { json, key }) {
  const m = /^=\{\{ ([\s\S]*) \}\}$/.exec(value);
  assert.ok(m, `not one expression: ${value}`);
  const $ = (name) => {
    assert.equal(name, 'Compute key and hash', 'an expression reads a node other than the key node');
    return { item: { json: key } };
  };
  // eslint-disable-next-line no-new-func
  return new Function('$json', '$', `return (${m[1]});`)(json, $);
}

// After the Claim, $json is the Postgres node's output.
const claimed = { id: 77 };

for (const kind of ['postmark', 'mailgun', 'sendgrid']) {
  const file = `${kind}-writer.json`;
  const compute = codeNode(file, 'Compute key and hash');

  test(`${file}: one item per order; the payload is the subject alone, hashed as Go hashes it`, () => {
    const out = compute([
      { json: { body: [{ id: 1842, email: '  Jane.Doe@Example.com ' }, { id: 7, email: 'b@example.com' }] } },
      { json: { id: 4, email: 'd@example.com' } },
    ]).map((i) => i.json);
    assert.deepEqual(out.map((o) => o.op_key), ['order-1842-receipt', 'order-7-receipt', 'order-4-receipt']);
    assert.equal(out[0].recipient, 'jane.doe@example.com');
    assert.equal(out[0].subject, 'Receipt 1842');
    assert.equal(out[0].payload_hash, GO_SUBJECT_HASH_1842);
    assert.equal(out[1].payload_hash, GO_SUBJECT_HASH_7);
    assert.deepEqual(JSON.parse(out[0].payload), { subject: 'Receipt 1842' });
    assert.equal(typeof out[0].text, 'string');
    assert.throws(() => compute([{ json: { body: { id: 1 } } }]), /an order needs an id and an email/);
  });

  const [key] = compute([{ json: { body: { id: 1842, email: 'Jane.Doe@Example.com' } } }]).map((i) => i.json);
  const send = nodeOf(file, 'Send email').parameters;
  const record = nodeOf(file, 'Confirm').parameters.options.queryReplacement;
  const confirm = (json) => expression(record, { json, key });

  test(`${file}: Send email carries the key node's op_key where the adapter looks, not the Claim's $json`, () => {
    let request;
    if (kind === 'mailgun') {
      request = Object.fromEntries(send.bodyParameters.parameters.map((p) => [
        p.name, p.value.startsWith('=') ? expression(p.value, { json: claimed, key }) : p.value,
      ]));
    } else {
      request = JSON.parse(expression(send.jsonBody, { json: claimed, key }));
    }
    switch (kind) {
      case 'postmark':
        assert.deepEqual(request.Metadata, { op_key: 'order-1842-receipt' });
        assert.equal(request.To, 'jane.doe@example.com');
        assert.equal(request.Subject, 'Receipt 1842');
        assert.ok(request.From && request.TextBody);
        break;
      case 'mailgun':
        assert.equal(request['v:op_key'], 'order-1842-receipt');
        assert.equal(request.to, 'jane.doe@example.com');
        assert.equal(request.subject, 'Receipt 1842');
        assert.ok(request.from && request.text);
        break;
      case 'sendgrid':
        assert.deepEqual(request.custom_args, { op_key: 'order-1842-receipt' });
        assert.deepEqual(request.personalizations, [{ to: [{ email: 'jane.doe@example.com' }] }]);
        assert.equal(request.subject, 'Receipt 1842');
        assert.ok(request.from.email && request.content[0].value);
        break;
    }
  });

  test(`${file}: Confirm records the id the adapter finds, from the send's documented answer`, () => {
    switch (kind) {
      case 'postmark': {
        // POST /email answers 200 with the MessageID the outbound search shows.
        const answer = { To: 'jane.doe@example.com', SubmittedAt: '2026-03-10T10:00:03.1234567-04:00',
          MessageID: 'b7bc2f4a-e38e-4336-af7d-e6c392c2f817', ErrorCode: 0, Message: 'OK' };
        assert.deepEqual(confirm(answer), ['order-1842-receipt', 'b7bc2f4a-e38e-4336-af7d-e6c392c2f817']);
        assert.deepEqual(confirm({ ErrorCode: 0, Message: 'OK' }), ['order-1842-receipt', null]);
        break;
      }
      case 'mailgun': {
        // POST /v3/{domain}/messages answers the Message-Id in <…>; the
        // events show it (message.headers.message-id) without them.
        const answer = { id: '<20260310140003.1.4F3A9C@mg.example.com>', message: 'Queued. Thank you.' };
        assert.deepEqual(confirm(answer), ['order-1842-receipt', '20260310140003.1.4F3A9C@mg.example.com']);
        assert.deepEqual(confirm({ id: '20260310140003.1.4F3A9C@mg.example.com' }), ['order-1842-receipt', null]);
        assert.deepEqual(confirm({ message: 'Queued. Thank you.' }), ['order-1842-receipt', null]);
        break;
      }
      case 'sendgrid': {
        // POST /v3/mail/send answers 202, no body, X-Message-Id; with
        // Include Response Headers and Status on, n8n gives the headers in
        // lower case.
        const answer = { body: '', headers: { 'x-message-id': 'Xj5LmNkWSOqRbdvOpR34BA', server: 'nginx' }, statusCode: 202, statusMessage: 'Accepted' };
        assert.deepEqual(confirm(answer), ['order-1842-receipt', 'Xj5LmNkWSOqRbdvOpR34BA']);
        assert.deepEqual(confirm({ body: '', headers: {}, statusCode: 202 }), ['order-1842-receipt', null]);
        break;
      }
    }
  });
}

// docs/n8n.md's lookup recipe shows how a provider with message states maps
// them; run its example as written (the code span, its line breaks
// spaces): every failed or cancelled word is failed, never an effect, and
// a word it does not know throws.
test("docs/n8n.md: the lookup recipe's state mapping maps every failed state, and throws on an unknown one", () => {
  const readme = readFileSync(new URL('../../docs/n8n.md', here), 'utf8');
  const m = /`(state: [\s\S]*?, status: String\(m\.status\))`/.exec(readme);
  assert.ok(m, 'docs/n8n.md: no `state: …, status: String(m.status)` example in the lookup recipe');
  const span = m[1].replace(/\n\s*/g, ' ');
  // eslint-disable-next-line no-new-func
  const map = new Function('m', `return ({ ${span} });`);
  for (const word of ['failed', 'undelivered', 'bounced', 'rejected', 'canceled', 'expired']) {
    assert.deepEqual(map({ status: word }), { state: 'failed', status: word }, word);
  }
  for (const word of ['queued', 'scheduled', 'sending']) {
    assert.equal(map({ status: word }).state, 'in_flight', word);
  }
  for (const word of ['sent', 'delivered']) {
    assert.equal(map({ status: word }).state, 'effect', word);
  }
  assert.throws(() => map({ status: 'blocked' }), /unknown status blocked/);
});
