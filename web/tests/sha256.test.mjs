// The shuffle check's SHA-256: the small fallback against node's crypto, and the
// commitment formula of docs/protocol.md.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { sha256Js, commitmentOf, verifyShuffle } from '../app/js/sha256.js';

test('the fallback SHA-256 agrees with node on the standard vectors and random lengths', () => {
  assert.equal(sha256Js(new Uint8Array()), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  assert.equal(sha256Js(new TextEncoder().encode('abc')), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  for (const n of [1, 55, 56, 63, 64, 65, 119, 120, 1000]) {
    const bytes = randomBytes(n);
    assert.equal(sha256Js(new Uint8Array(bytes)), createHash('sha256').update(bytes).digest('hex'), `length ${n}`);
  }
});

test('the commitment is SHA-256(salt ‖ "frontier/hidden-layout/v1:" ‖ layout), and a changed layout fails', async () => {
  const salt = randomBytes(32);
  const layout = 'PQBRBRNNPPPPPPP/rnbqbrpnppppppp';
  const expected = createHash('sha256').update(salt).update(`frontier/hidden-layout/v1:${layout}`).digest('hex');
  assert.equal(await commitmentOf(salt.toString('hex'), layout), expected);
  assert.equal(await verifyShuffle(salt.toString('hex'), layout, expected), true);
  assert.equal(await verifyShuffle(salt.toString('hex'), 'RNBQBNRPPPPPPPP/rnbqbnrpppppppp', expected), false);
});
