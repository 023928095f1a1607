// Checks ledger/payloadhash.js — the snippet users paste into an n8n Code
// node — against the same vectors as the Go implementation.
// Run: node --test ledger/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import vm from 'node:vm';

const here = new URL('.', import.meta.url);
const source = readFileSync(new URL('payloadhash.js', here), 'utf8');
const sandbox = { require: createRequire(import.meta.url) };
vm.runInNewContext(source, sandbox);
const { canonicalJSON, payloadHash } = sandbox;

const { vectors } = JSON.parse(readFileSync(new URL('testdata/payload-hash-vectors.json', here), 'utf8'));

test('vectors are present', () => {
  assert.ok(vectors.length >= 40, `only ${vectors.length} vectors`);
});

for (const v of vectors) {
  if (v.js_skip) continue;
  test(v.desc, () => {
    if (v.error) {
      assert.throws(() => payloadHash(JSON.parse(v.input)));
      return;
    }
    const value = JSON.parse(v.input);
    assert.equal(canonicalJSON(value), v.canonical);
    assert.equal(payloadHash(value), v.sha256);
  });
}
