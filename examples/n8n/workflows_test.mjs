// Runs the Code nodes of writer.json and lookup.json as n8n runs them
// ("Run Once for All Items": $input.all(), return an array of items),
// outside n8n. Run: node --test examples/n8n/
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
