// A game as this client may know it: the server's last `game` frame with every later
// `event` applied in version order. Positions are never computed here: each frame and
// event carries the FEN the server drew, and the board shows exactly that. Identities
// come only from what the server sent: reveals (public) and this seat's own
// `captured_identity`s.

import { parseFen, findMove, play, san, parseSquare, START_FEN, ROLE_LETTER, legalMoves, inCheck, toFen } from './chess.js';

/** A new game state from a `game` frame. */
export function fromFrame(frame, receivedAt = Date.now()) {
  const g = frame.game;
  return {
    id: frame.game_id,
    version: frame.version,
    seat: frame.seat,
    variant: g.variant,
    rated: g.rated,
    clock: g.clock,
    status: g.status,
    white: g.white,
    black: g.black,
    fen: g.fen,
    turn: g.turn,
    moves: g.moves.map((m) => ({ uci: m.uci, reveal: m.reveal || null, captured: m.captured || null })),
    // The FEN the server sent after each ply, where this client received that ply's event
    // (index = ply − 1); a game frame sends only the last one.
    fens: [],
    pendingPromotion: g.pending_promotion,
    capturedIdentities: g.captured_identities.slice(),
    drawOffer: g.draw_offer,
    commitment: g.commitment,
    outcome: g.outcome,
    shuffle: g.shuffle,
    clocks: g.clocks ? { ...g.clocks, receivedAt } : null,
    last: null,
  };
}

/**
 * Applies an `event` frame. Returns 'applied', 'old' (already seen) or 'gap' (a version is
 * missing: the caller re-opens the game for a whole view).
 */
export function applyEvent(state, frame, receivedAt = Date.now()) {
  if (frame.version <= state.version) return 'old';
  if (frame.version !== state.version + 1) return 'gap';
  const e = frame.event;
  state.version = frame.version;
  state.last = e;
  switch (e.kind) {
    case 'created':
      state.status = 'waiting';
      state[e.color] = e.player;
      break;
    case 'started':
      state.status = 'playing';
      state.white = e.white;
      state.black = e.black;
      state.fen = e.fen;
      state.commitment = e.commitment || state.commitment;
      break;
    case 'move':
      state.moves.push({ uci: e.uci, reveal: e.reveal || null, captured: e.captured || null });
      state.fens[state.moves.length - 1] = e.fen;
      state.fen = e.fen;
      state.turn = e.turn;
      state.pendingPromotion = e.promotion_pending ? e.uci.slice(2, 4) : null;
      state.drawOffer = null;
      if (e.captured_identity && e.captured) {
        state.capturedIdentities.push({ square: e.captured.square, role: e.captured_identity, ply: e.ply });
      }
      break;
    case 'promotion':
      state.moves[state.moves.length - 1].uci = e.uci;
      state.fens[state.moves.length - 1] = e.fen;
      state.fen = e.fen;
      state.turn = e.turn;
      state.pendingPromotion = null;
      break;
    case 'undo':
      // Against the computer: the player's last move and the reply are taken back, as one
      // change; the position now is the event's.
      state.moves.splice(Math.max(0, state.moves.length - (e.taken_back || []).length));
      state.fens.length = Math.min(state.fens.length, state.moves.length);
      state.fen = e.fen;
      state.turn = e.turn;
      state.pendingPromotion = null;
      state.drawOffer = null;
      break;
    case 'draw_offered':
      state.drawOffer = e.by;
      break;
    case 'draw_declined':
      state.drawOffer = null;
      break;
    default:
      break;
  }
  if (frame.outcome) {
    state.outcome = frame.outcome;
    state.status = 'finished';
  }
  if (frame.shuffle) state.shuffle = frame.shuffle;
  if (frame.clocks) state.clocks = { ...frame.clocks, receivedAt };
  return 'applied';
}

/**
 * The public position after `ply` plies (0: the start) and that ply's move squares, for
 * stepping back through a game: the FEN the server sent for that ply where this client
 * received it, else the moves replayed from the start with their public reveals (as the
 * record screen does). `null` when the moves cannot be replayed.
 */
export function positionAt(state, ply) {
  const lastOf = (i) => (i > 0 ? [parseSquare(state.moves[i - 1].uci.slice(0, 2)), parseSquare(state.moves[i - 1].uci.slice(2, 4))] : null);
  if (ply >= state.moves.length) return { fen: state.fen, last: lastOf(state.moves.length) };
  if (ply > 0 && state.fens[ply - 1]) return { fen: state.fens[ply - 1], last: lastOf(ply) };
  let pos = startPosition(state.variant);
  for (const m of state.moves.slice(0, ply)) {
    const found = findMove(pos, m.uci) || findMove(pos, m.uci.slice(0, 4));
    if (!found) return null;
    const promotion = m.uci.length === 5 ? m.uci[4] : undefined;
    pos = play(pos, promotion && !found.promotion ? { ...found, promotion } : found, m.reveal ? ROLE_LETTER[m.reveal.role] : undefined);
  }
  return { fen: toFen(pos), last: lastOf(ply) };
}

/** The start position of a variant (hidden chess: every piece but the kings hidden). */
export function startPosition(variant) {
  const hidden = variant === 'hidden' ? ' a1b1c1d1f1g1h1a2b2c2d2e2f2g2h2a7b7c7d7e7f7g7h7a8b8c8d8f8g8h8' : '';
  return parseFen(START_FEN + hidden, variant);
}

/**
 * The move list in SAN, replayed from the start with the public reveals; each entry
 * {san, uci, reveal, captured}. If a move cannot be replayed (a position that did not
 * start from the usual start), the rest is written in UCI.
 */
export function moveList(variant, moves) {
  let pos = startPosition(variant);
  const out = [];
  let lost = false;
  for (const m of moves) {
    let text = m.uci;
    if (!lost) {
      const found = findMove(pos, m.uci.length === 5 && pos.board[parseSquare(m.uci.slice(0, 2))]?.hidden ? m.uci.slice(0, 4) : m.uci);
      if (!found) lost = true;
      else {
        text = san(pos, found);
        const landing = m.reveal ? ROLE_LETTER[m.reveal.role] : undefined;
        const promotion = m.uci.length === 5 ? m.uci[4] : undefined;
        pos = play(pos, promotion && !found.promotion ? { ...found, promotion } : found, landing);
        if (pos.exploded && pos.variant === 'atomic' && !pos.board.some((p) => p && p.role === 'k' && p.color === pos.turn)) text += '#';
        else if (inCheck(pos)) text += legalMoves(pos).length ? '+' : '#';
      }
    }
    out.push({ san: text, uci: m.uci, reveal: m.reveal, captured: m.captured });
  }
  return out;
}

/**
 * The identities of `color`'s 15 non-king pieces not yet accounted for, as a count per
 * role: the start set minus every identity that side revealed (a hidden piece reveals
 * once, when it first moves, or when castling moves it) minus the identities of that
 * side's pieces this seat captured (`known`, from its own `captured_identities`).
 * Hidden chess only; white moves first, so move i is White's when i is even.
 */
export function unaccounted(state, color, known = []) {
  if (state.variant !== 'hidden') return null;
  const counts = { q: 1, r: 2, b: 2, n: 2, p: 8 };
  state.moves.forEach((m, i) => {
    const mover = i % 2 === 0 ? 'w' : 'b';
    if (m.reveal && mover === color) {
      const r = ROLE_LETTER[m.reveal.role];
      if (counts[r] > 0) counts[r] -= 1;
    }
  });
  for (const k of known) {
    const r = ROLE_LETTER[k.role];
    if (counts[r] > 0) counts[r] -= 1;
  }
  return counts;
}
