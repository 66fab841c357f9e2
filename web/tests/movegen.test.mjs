// The client's move generator against the project's perft data (libs/rules/tests/data, the
// same counts the Rust rules library passes). Hidden chess is counted over the full state,
// as the data files are: the test (never the client) knows each hidden piece's identity
// and makes every move with its reveal; a hidden piece revealed as a pawn on its last rank
// counts once per promotion choice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseFen, legalMoves, play, perft, startRole, rankOf, san, findMove } from '../app/js/chess.js';

const DATA = fileURLToPath(new URL('../../libs/rules/tests/data/', import.meta.url));
// Counts above this many nodes are left to the Rust suite (`make perft`).
const MAX_NODES = 12000;

function cases(file) {
  const text = readFileSync(DATA + file, 'utf8');
  const out = [];
  let current = null;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    if (line.includes(';D')) {
      const [fen, ...depths] = line.split(';');
      const counts = depths.map((d) => d.trim().split(/\s+/)).map(([d, n]) => [Number(d.slice(1)), Number(n)]);
      out.push({ id: fen, fen, counts });
    } else if (line.startsWith('id ')) {
      current = { id: line.slice(3), counts: [] };
      out.push(current);
    } else if (line.startsWith('epd ') && current) current.fen = line.slice(4);
    else if (line.startsWith('perft ') && current) {
      const [, d, n] = line.split(/\s+/);
      current.counts.push([Number(d), Number(n)]);
    } else if (current && /^(play|fen|pending|halfmoves|outcome|distinct-from)\b/.test(line)) current.skip = true;
  }
  return out.filter((c) => c.fen && !c.skip);
}

/** A hidden-chess position from the server notation: true roles kept aside as `secret`. */
function hiddenTruth(fen) {
  const pos = parseFen(fen, 'hidden');
  pos.board.forEach((p, sq) => {
    if (p && p.hidden) {
      p.secret = p.role;
      p.role = startRole(sq);
    }
  });
  return pos;
}

function perftHidden(pos, depth) {
  if (depth === 0) return 1;
  let n = 0;
  for (const m of legalMoves(pos)) {
    const mover = pos.board[m.castle !== undefined ? m.castle : m.from];
    const landing = mover.hidden ? mover.secret : undefined;
    const last = pos.turn === 'w' ? 7 : 0;
    if (m.castle === undefined && landing === 'p' && rankOf(m.to) === last && !m.promotion) {
      for (const promotion of 'qrbn') n += perftHidden(play(pos, { ...m, promotion }, landing), depth - 1);
    } else {
      n += perftHidden(play(pos, m, landing), depth - 1);
    }
  }
  return n;
}

for (const [file, variant] of [
  ['standard.perft', 'standard'],
  ['atomic.perft', 'atomic'],
  ['atomic-random.epd', 'atomic'],
  ['hidden-random.epd', 'hidden'],
]) {
  test(`perft: ${file}`, () => {
    let checked = 0;
    for (const c of cases(file)) {
      for (const [depth, nodes] of c.counts) {
        if (nodes > MAX_NODES) continue;
        const got = variant === 'hidden' ? perftHidden(hiddenTruth(c.fen), depth) : perft(parseFen(c.fen, variant), depth);
        assert.equal(got, nodes, `${c.id} depth ${depth}`);
        checked++;
      }
    }
    assert.ok(checked >= 5, `${file}: only ${checked} counts checked`);
  });
}

test('SAN names hidden pieces by the piece they look like, and disambiguates', () => {
  const pos = parseFen('rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 a1b1c1d1f1g1h1a2b2c2d2e2f2g2h2a7b7c7d7e7f7g7h7a8b8c8d8f8g8h8', 'hidden');
  assert.equal(san(pos, findMove(pos, 'g1f3')), 'Nf3');
  const rooks = parseFen('4k3/8/8/8/8/8/4K3/R6R w - - 0 1');
  assert.equal(san(rooks, findMove(rooks, 'a1d1')), 'Rad1');
});

test('atomic: a king never captures, and a capture next to its own king is refused', () => {
  const pos = parseFen('4k3/8/8/8/8/8/3p4/4K3 w - - 0 1', 'atomic');
  assert.equal(findMove(pos, 'e1d2'), null);
  const adj = parseFen('4k3/8/8/8/8/8/3pR3/4K3 w - - 0 1', 'atomic');
  assert.equal(findMove(adj, 'e2d2'), null);
});
