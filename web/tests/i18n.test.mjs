// Every translation key exists in all five languages, no language has a key English lacks,
// every `t('key')` the client's code uses exists, and placeholders agree across languages.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { STRINGS, LANGS } from '../app/js/i18n.js';

const en = Object.keys(STRINGS.en);

test('the five languages of the seeds are offered', () => {
  assert.deepEqual(LANGS.map(([c]) => c).sort(), ['en', 'it', 'pl', 'ru', 'tr']);
  assert.deepEqual(Object.keys(STRINGS).sort(), ['en', 'it', 'pl', 'ru', 'tr']);
});

for (const [code] of LANGS) {
  test(`${code}: every key, no extra key, same placeholders, nothing empty`, () => {
    const keys = Object.keys(STRINGS[code]);
    assert.deepEqual(en.filter((k) => !keys.includes(k)), [], `${code} lacks keys`);
    assert.deepEqual(keys.filter((k) => !en.includes(k)), [], `${code} has keys English lacks`);
    for (const k of en) {
      const s = STRINGS[code][k];
      assert.ok(typeof s === 'string' && s.trim().length > 0, `${code}.${k} is empty`);
      const holes = (x) => (x.match(/\{\w+\}/g) || []).sort().join();
      assert.equal(holes(s), holes(STRINGS.en[k]), `${code}.${k} placeholders`);
    }
  });
}

test('every key the code uses exists', () => {
  const dir = fileURLToPath(new URL('../app/js/', import.meta.url));
  const used = new Set();
  for (const f of readdirSync(dir)) {
    const src = readFileSync(dir + f, 'utf8');
    for (const m of src.matchAll(/\bt\('([\w-]+)'\s*[,)]/g)) used.add(m[1]);
  }
  // Keys built from a prefix and a value the protocol defines.
  const dynamic = {
    variant_: ['standard', 'hidden', 'atomic'],
    color_: ['white', 'black', 'random'],
    level_: ['easy', 'medium', 'hard'],
    theme_: ['green', 'brown', 'blue', 'felt', 'marble', 'sandstone', 'glacier', 'amber', 'tidepool', 'chamber'],
    set_: ['frontier', 'geometric', 'letters', 'emblem', 'outline', 'pixel', 'relief'],
    role_: ['p', 'n', 'b', 'r', 'q', 'k'],
    modStatus_: ['open', 'dismissed', 'marked', 'all'],
    modAction_: ['dismiss', 'mark', 'unmark'],
    modSkip_: ['opening', 'only_move', 'decided', 'pending_promotion'],
    fpReason_: ['engine_agreement', 'low_centipawn_loss', 'near_best_share', 'steady_think_time', 'fast_best_in_complex', 'slow_only_moves'],
    reason_: ['checkmate', 'king-exploded', 'resignation', 'timeout', 'abandonment', 'stalemate', 'repetition', 'fifty-moves', 'insufficient-material', 'agreement', 'timeout-vs-insufficient-material', 'aborted'],
  };
  for (const [prefix, values] of Object.entries(dynamic)) for (const v of values) used.add(prefix + v);
  for (const side of ['white', 'black']) used.add(side);
  assert.deepEqual([...used].filter((k) => !en.includes(k)), []);
});
