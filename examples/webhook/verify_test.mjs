// docs/receivers.md's JavaScript verifier of the webhook's Sweeper-Signature
// header, run as written on signatures sweeper made
// (notify/webhook/testdata/signature_vectors.json, checked against the
// receiver's own Sign by TestSignatureVectors). Run: node --test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const root = new URL('../../', import.meta.url);
const readme = readFileSync(new URL('docs/receivers.md', root), 'utf8');
const marker = readme.indexOf('<!-- webhook-verify-js -->');
assert.ok(marker >= 0, 'docs/receivers.md has no <!-- webhook-verify-js --> snippet');
const fenced = readme.slice(marker).match(/```js\n([\s\S]*?)\n```/);
assert.ok(fenced, 'no ```js block after the marker');
// The snippet as a Code node runs it: CommonJS, with require.
const verify = new Function('require', `${fenced[1]}\nreturn verifySweeperSignature;`)(createRequire(import.meta.url));
const vectors = JSON.parse(readFileSync(new URL('notify/webhook/testdata/signature_vectors.json', root), 'utf8'));

test('accepts what sweeper signed, as a Buffer or a string', () => {
  for (const v of vectors) {
    assert.equal(verify(v.secret, v.header, Buffer.from(v.body, 'utf8'), v.t + 10), true, v.header);
    assert.equal(verify(v.secret, v.header, v.body, v.t - 10), true, v.header);
  }
});

test('refuses a tampered body, another secret, an old timestamp, a malformed header', () => {
  for (const v of vectors) {
    assert.equal(verify(v.secret, v.header, v.body + ' ', v.t), false);
    assert.equal(verify(v.secret + 'x', v.header, v.body, v.t), false);
    assert.equal(verify(v.secret, v.header, v.body, v.t + 301), false);
    assert.equal(verify(v.secret, v.header.replace(/v1=/, 'v0='), v.body, v.t), false);
    assert.equal(verify(v.secret, '', v.body, v.t), false);
    assert.equal(verify(v.secret, v.header.replace(/.$/, ''), v.body, v.t), false);
  }
});
