// sweeper payload hash: SHA-256 (lowercase hex) of the canonical JSON of the
// normalized fields. Paste into an n8n Code node (self-hosted n8n needs
// NODE_FUNCTION_ALLOW_BUILTIN=crypto) or any Node.js program.
function canonicalString(s) {
  if (/\p{Cs}/u.test(s)) throw new Error('payload hash: unpaired UTF-16 surrogate');
  return JSON.stringify(s.normalize('NFC'));
}

function canonicalJSON(v) {
  if (v === null || typeof v === 'boolean') return String(v);
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error('payload hash: number out of range');
    return JSON.stringify(v);
  }
  if (typeof v === 'string') return canonicalString(v);
  if (Array.isArray(v)) return '[' + v.map(canonicalJSON).join(',') + ']';
  if (typeof v === 'object') {
    const members = new Map();
    for (const [k, val] of Object.entries(v)) {
      if (val === undefined) continue;
      const key = canonicalString(k);
      if (members.has(key)) throw new Error('payload hash: duplicate key ' + key);
      members.set(key, canonicalJSON(val));
    }
    const keys = [...members.keys()].sort((a, b) => (JSON.parse(a) < JSON.parse(b) ? -1 : 1));
    return '{' + keys.map((k) => k + ':' + members.get(k)).join(',') + '}';
  }
  throw new Error('payload hash: unsupported type ' + typeof v);
}

function payloadHash(fields) {
  return require('crypto').createHash('sha256').update(canonicalJSON(fields), 'utf8').digest('hex');
}
