// The client's own knowledge of the rules, for highlighting legal moves and writing SAN.
// It works on the PUBLIC position only: a hidden piece stands on its start square and moves
// as its apparent role (the role that starts there), exactly as RULES.md §2 says legality
// is decided. The server stays the authority: a move this module allows and the server
// refuses is undone by redrawing the server's state.
//
// Squares are 0..63, a1 = 0, h1 = 7, a8 = 56. A piece is {color: 'w'|'b', role:
// 'p'|'n'|'b'|'r'|'q'|'k', hidden: bool}.

export const START_FEN = 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1';
export const ROLES = { p: 'pawn', n: 'knight', b: 'bishop', r: 'rook', q: 'queen', k: 'king' };
export const ROLE_LETTER = { pawn: 'p', knight: 'n', bishop: 'b', rook: 'r', queen: 'q', king: 'k' };

export const fileOf = (sq) => sq & 7;
export const rankOf = (sq) => sq >> 3;
export const squareName = (sq) => 'abcdefgh'[sq & 7] + (1 + (sq >> 3));
export function parseSquare(name) {
  if (typeof name !== 'string' || name.length !== 2) return -1;
  const f = name.charCodeAt(0) - 97;
  const r = name.charCodeAt(1) - 49;
  return f >= 0 && f < 8 && r >= 0 && r < 8 ? r * 8 + f : -1;
}

/** The role that starts on `sq` (a hidden piece's apparent role), or null. */
export function startRole(sq) {
  const r = rankOf(sq);
  if (r === 1 || r === 6) return 'p';
  if (r === 0 || r === 7) return 'rnbqkbnr'[fileOf(sq)];
  return null;
}

const other = (c) => (c === 'w' ? 'b' : 'w');
const KNIGHT = [[1, 2], [2, 1], [2, -1], [1, -2], [-1, -2], [-2, -1], [-2, 1], [-1, 2]];
const KING = [[1, 0], [1, 1], [0, 1], [-1, 1], [-1, 0], [-1, -1], [0, -1], [1, -1]];
const ROOK_DIRS = [[1, 0], [-1, 0], [0, 1], [0, -1]];
const BISHOP_DIRS = [[1, 1], [1, -1], [-1, 1], [-1, -1]];

function offset(sq, df, dr) {
  const f = fileOf(sq) + df;
  const r = rankOf(sq) + dr;
  return f >= 0 && f < 8 && r >= 0 && r < 8 ? r * 8 + f : -1;
}

/** Parses a FEN (six fields, plus hidden chess's seventh: the hidden squares or `-`). */
export function parseFen(fen, variant = 'standard') {
  const parts = fen.trim().split(/\s+/);
  const rows = parts[0].split('/');
  if (rows.length !== 8) throw new Error('bad FEN: ' + fen);
  const board = new Array(64).fill(null);
  rows.forEach((row, i) => {
    let f = 0;
    for (const ch of row) {
      if (/[1-8]/.test(ch)) f += Number(ch);
      else {
        const lower = ch.toLowerCase();
        if (!'pnbrqk'.includes(lower) || f > 7) throw new Error('bad FEN: ' + fen);
        board[(7 - i) * 8 + f] = { color: ch === lower ? 'b' : 'w', role: lower, hidden: false };
        f += 1;
      }
    }
  });
  if (parts[6] && parts[6] !== '-') {
    for (let i = 0; i + 1 < parts[6].length; i += 2) {
      const sq = parseSquare(parts[6].slice(i, i + 2));
      if (sq >= 0 && board[sq]) board[sq].hidden = true;
    }
  }
  const turn = parts[1] === 'b' ? 'b' : 'w';
  const castling = [];
  for (const ch of parts[2] || '-') {
    if (ch === '-') continue;
    const color = ch === ch.toUpperCase() ? 'w' : 'b';
    const rank = color === 'w' ? 0 : 7;
    const king = board.findIndex((p, s) => p && p.role === 'k' && p.color === color && rankOf(s) === rank);
    let file;
    if (ch.toLowerCase() === 'k' || ch.toLowerCase() === 'q') {
      // The outermost rook-looking piece on that side (X-FEN).
      const dir = ch.toLowerCase() === 'k' ? -1 : 1;
      file = dir < 0 ? 7 : 0;
      while (file >= 0 && file < 8) {
        const s = rank * 8 + file;
        const p = board[s];
        // A hidden piece counts as the piece it looks like.
        if (p && p.color === color && (p.hidden ? startRole(s) : p.role) === 'r') break;
        if (p && p.role === 'k' && p.color === color) file = -1;
        else file += dir;
      }
    } else {
      file = ch.toLowerCase().charCodeAt(0) - 97;
    }
    if (king >= 0 && file >= 0 && file < 8) castling.push(rank * 8 + file);
  }
  const ep = parts[3] && parts[3] !== '-' ? parseSquare(parts[3]) : -1;
  return {
    variant,
    board,
    turn,
    castling,
    ep,
    halfmoves: Number(parts[4] || 0),
    fullmoves: Number(parts[5] || 1),
  };
}

/** The public FEN of a position (with the hidden field for hidden chess). */
export function toFen(pos) {
  const rows = [];
  for (let r = 7; r >= 0; r--) {
    let row = '';
    let empty = 0;
    for (let f = 0; f < 8; f++) {
      const p = pos.board[r * 8 + f];
      if (!p) empty++;
      else {
        if (empty) row += empty;
        empty = 0;
        row += p.color === 'w' ? p.role.toUpperCase() : p.role;
      }
    }
    if (empty) row += empty;
    rows.push(row);
  }
  let castle = '';
  for (const [color, side] of [['w', 'k'], ['w', 'q'], ['b', 'k'], ['b', 'q']]) {
    const rank = color === 'w' ? 0 : 7;
    const has = pos.castling.some((s) => rankOf(s) === rank && (side === 'k' ? fileOf(s) > kingFile(pos, color) : fileOf(s) < kingFile(pos, color)));
    if (has) castle += color === 'w' ? side.toUpperCase() : side;
  }
  let fen = `${rows.join('/')} ${pos.turn} ${castle || '-'} ${pos.ep >= 0 ? squareName(pos.ep) : '-'} ${pos.halfmoves} ${pos.fullmoves}`;
  if (pos.variant === 'hidden') {
    const hidden = pos.board.map((p, s) => (p && p.hidden ? squareName(s) : '')).join('');
    fen += ' ' + (hidden || '-');
  }
  return fen;
}

function kingFile(pos, color) {
  const k = pos.board.findIndex((p) => p && p.role === 'k' && p.color === color);
  return k < 0 ? 4 : fileOf(k);
}

function clone(pos) {
  return {
    ...pos,
    board: pos.board.map((p) => (p ? { ...p } : null)),
    castling: pos.castling.slice(),
  };
}

/** Whether `sq` is attacked by `by` (kings included unless `noKing`). */
export function attacked(board, sq, by, noKing = false) {
  const pawnDir = by === 'w' ? -1 : 1;
  for (const df of [-1, 1]) {
    const s = offset(sq, df, pawnDir);
    if (s >= 0 && board[s] && board[s].color === by && board[s].role === 'p') return true;
  }
  for (const [df, dr] of KNIGHT) {
    const s = offset(sq, df, dr);
    if (s >= 0 && board[s] && board[s].color === by && board[s].role === 'n') return true;
  }
  if (!noKing) {
    for (const [df, dr] of KING) {
      const s = offset(sq, df, dr);
      if (s >= 0 && board[s] && board[s].color === by && board[s].role === 'k') return true;
    }
  }
  for (const [dirs, roles] of [[ROOK_DIRS, 'rq'], [BISHOP_DIRS, 'bq']]) {
    for (const [df, dr] of dirs) {
      let s = offset(sq, df, dr);
      while (s >= 0) {
        const p = board[s];
        if (p) {
          if (p.color === by && roles.includes(p.role)) return true;
          break;
        }
        s = offset(s, df, dr);
      }
    }
  }
  return false;
}

const kingSquare = (board, color) => board.findIndex((p) => p && p.role === 'k' && p.color === color);

function adjacent(a, b) {
  return Math.abs(fileOf(a) - fileOf(b)) <= 1 && Math.abs(rankOf(a) - rankOf(b)) <= 1;
}

/** Whether `color`'s king is in check (atomic: touching kings are never in check). */
export function inCheck(pos, color = pos.turn) {
  const k = kingSquare(pos.board, color);
  if (k < 0) return false;
  if (pos.variant === 'atomic') {
    const enemy = kingSquare(pos.board, other(color));
    if (enemy >= 0 && adjacent(k, enemy)) return false;
    return attacked(pos.board, k, other(color), true);
  }
  return attacked(pos.board, k, other(color));
}

/** Pseudo-legal moves: {from, to, promotion?, castle?, ep?}. */
function pseudo(pos) {
  const moves = [];
  const { board, turn } = pos;
  const atomic = pos.variant === 'atomic';
  for (let from = 0; from < 64; from++) {
    const p = board[from];
    if (!p || p.color !== turn) continue;
    if (p.role === 'p') {
      const dir = turn === 'w' ? 1 : -1;
      const last = turn === 'w' ? 7 : 0;
      const startRank = turn === 'w' ? 1 : 6;
      const push = (to, extra = {}) => {
        if (rankOf(to) === last) for (const promotion of 'qrbn') moves.push({ from, to, promotion, ...extra });
        else moves.push({ from, to, ...extra });
      };
      const one = offset(from, 0, dir);
      if (one >= 0 && !board[one]) {
        push(one);
        const two = offset(from, 0, 2 * dir);
        if (rankOf(from) === startRank && two >= 0 && !board[two]) moves.push({ from, to: two });
      }
      for (const df of [-1, 1]) {
        const to = offset(from, df, dir);
        if (to < 0) continue;
        if (board[to] && board[to].color !== turn) push(to);
        else if (to === pos.ep && !board[to]) {
          const victim = board[offset(to, 0, -dir)];
          if (victim && victim.role === 'p' && victim.color !== turn && !victim.hidden) moves.push({ from, to, ep: true });
        }
      }
    } else if (p.role === 'n' || p.role === 'k') {
      for (const [df, dr] of p.role === 'n' ? KNIGHT : KING) {
        const to = offset(from, df, dr);
        if (to < 0) continue;
        const q = board[to];
        if (!q) moves.push({ from, to });
        else if (q.color !== turn && !(atomic && p.role === 'k')) moves.push({ from, to });
      }
    } else {
      const dirs = p.role === 'r' ? ROOK_DIRS : p.role === 'b' ? BISHOP_DIRS : ROOK_DIRS.concat(BISHOP_DIRS);
      for (const [df, dr] of dirs) {
        let to = offset(from, df, dr);
        while (to >= 0) {
          const q = board[to];
          if (!q) moves.push({ from, to });
          else {
            if (q.color !== turn) moves.push({ from, to });
            break;
          }
          to = offset(to, df, dr);
        }
      }
    }
  }
  castles(pos, moves);
  return moves;
}

function castles(pos, moves) {
  const { board, turn } = pos;
  const rank = turn === 'w' ? 0 : 7;
  const king = kingSquare(board, turn);
  if (king < 0 || rankOf(king) !== rank) return;
  if (inCheck(pos, turn)) return;
  for (const rook of pos.castling) {
    if (rankOf(rook) !== rank) continue;
    const r = board[rook];
    if (!r || r.color !== turn || r.role !== 'r') continue;
    // Hidden chess castles only with the hidden corner piece (RULES.md §2).
    if (pos.variant === 'hidden' && !r.hidden) continue;
    const kingSide = fileOf(rook) > fileOf(king);
    const kTo = rank * 8 + (kingSide ? 6 : 2);
    const rTo = rank * 8 + (kingSide ? 5 : 3);
    // Every square between the king and the rook, and both destinations, must be empty
    // (but for the king and the rook themselves).
    const lo = Math.min(king, rook, kTo, rTo);
    const hi = Math.max(king, rook, kTo, rTo);
    let clear = true;
    for (let s = lo; s <= hi; s++) {
      if (s !== king && s !== rook && board[s]) clear = false;
    }
    if (!clear) continue;
    // The king may not pass through or land on an attacked square.
    let safe = true;
    const step = kTo > king ? 1 : -1;
    for (let s = king; ; s += step) {
      const test = clone(pos);
      test.board[king] = null;
      test.board[rook] = null;
      test.board[s] = { color: turn, role: 'k', hidden: false };
      if (s !== king && inCheck(test, turn)) safe = false;
      if (s === kTo) break;
    }
    if (safe) moves.push({ from: king, to: kTo, castle: rook, rookTo: rTo });
  }
}

/**
 * Makes `move` and returns the new position. `landing` is the role the moving piece
 * lands as (a hidden piece's reveal; default: the role it shows). For castling, `landing`
 * is the corner piece's revealed role. Returns also `exploded` (atomic) on the result.
 */
export function play(pos, move, landing) {
  const next = clone(pos);
  const b = next.board;
  const piece = b[move.from];
  const turn = pos.turn;
  const captured = move.ep ? b[move.to + (turn === 'w' ? -8 : 8)] : move.castle !== undefined ? null : b[move.to];
  const exploded = [];
  next.ep = -1;
  const wasHidden = piece.hidden;
  let role = piece.role;
  if (move.castle !== undefined) {
    const rook = b[move.castle];
    b[move.from] = null;
    b[move.castle] = null;
    b[move.to] = { color: turn, role: 'k', hidden: false };
    b[move.rookTo] = { color: turn, role: rook.hidden && landing ? landing : rook.role, hidden: false };
  } else {
    if (wasHidden && landing) role = landing;
    if (move.promotion) role = move.promotion;
    b[move.from] = null;
    if (move.ep) b[move.to + (turn === 'w' ? -8 : 8)] = null;
    b[move.to] = { color: turn, role, hidden: false };
    if (role === 'p' && !move.promotion && Math.abs(move.to - move.from) === 16 && piece.role === 'p') {
      next.ep = (move.from + move.to) / 2;
    }
    if (pos.variant === 'atomic' && captured) {
      b[move.to] = null;
      exploded.push(move.to);
      for (const [df, dr] of KING) {
        const s = offset(move.to, df, dr);
        if (s >= 0 && b[s] && b[s].role !== 'p') {
          b[s] = null;
          exploded.push(s);
        }
      }
    }
  }
  // Castling rights: lost when the king moves or a corner piece leaves or is removed.
  next.castling = next.castling.filter((r) => {
    const color = rankOf(r) === 0 ? 'w' : 'b';
    const p = b[r];
    return p && p.role === 'r' && p.color === color && r !== move.from && !(piece.role === 'k' && piece.color === color);
  });
  next.halfmoves = captured || piece.role === 'p' || wasHidden ? 0 : pos.halfmoves + 1;
  if (turn === 'b') next.fullmoves += 1;
  next.turn = other(turn);
  next.exploded = exploded;
  next.captured = captured;
  return next;
}

/** The legal moves of the side to move. */
export function legalMoves(pos) {
  if (pos.over) return [];
  const out = [];
  const turn = pos.turn;
  for (const m of pseudo(pos)) {
    const after = play(pos, m);
    const own = kingSquare(after.board, turn);
    if (pos.variant === 'atomic') {
      if (own < 0) continue;
      if (kingSquare(after.board, other(turn)) < 0) {
        out.push(m);
        continue;
      }
    }
    if (!inCheck(after, turn)) out.push(m);
  }
  return out;
}

/** The position's end, if the rules decide it from the board: 'checkmate', 'stalemate', 'king-exploded'. */
export function boardOutcome(pos) {
  if (pos.variant === 'atomic' && (kingSquare(pos.board, 'w') < 0 || kingSquare(pos.board, 'b') < 0)) return 'king-exploded';
  if (legalMoves(pos).length) return null;
  return inCheck(pos) ? 'checkmate' : 'stalemate';
}

export function uci(m) {
  return squareName(m.from) + squareName(m.to) + (m.promotion || '');
}

/** Finds the legal move a UCI string names (castling as the king's move). */
export function findMove(pos, text) {
  const from = parseSquare(text.slice(0, 2));
  const to = parseSquare(text.slice(2, 4));
  const promotion = text[4] || undefined;
  return legalMoves(pos).find((m) => m.from === from && m.to === to && (m.promotion || undefined) === promotion) || null;
}

/** SAN of a legal move (a hidden piece is written as the piece it looks like). */
export function san(pos, m) {
  const p = pos.board[m.from];
  let text;
  if (m.castle !== undefined) text = fileOf(m.to) === 6 ? 'O-O' : 'O-O-O';
  else {
    const capture = !!pos.board[m.to] || m.ep;
    if (p.role === 'p') {
      text = (capture ? 'abcdefgh'[fileOf(m.from)] + 'x' : '') + squareName(m.to) + (m.promotion ? '=' + m.promotion.toUpperCase() : '');
    } else {
      const rivals = legalMoves(pos).filter((o) => o.to === m.to && o.from !== m.from && pos.board[o.from].role === p.role && o.castle === undefined);
      let dis = '';
      if (rivals.length) {
        const sameFile = rivals.some((o) => fileOf(o.from) === fileOf(m.from));
        const sameRank = rivals.some((o) => rankOf(o.from) === rankOf(m.from));
        if (!sameFile) dis = 'abcdefgh'[fileOf(m.from)];
        else if (!sameRank) dis = String(rankOf(m.from) + 1);
        else dis = squareName(m.from);
      }
      text = p.role.toUpperCase() + dis + (capture ? 'x' : '') + squareName(m.to);
    }
  }
  return text;
}

/** Counts the leaves of the legal-move tree (public position; no hidden identities). */
export function perft(pos, depth) {
  if (depth === 0) return 1;
  const moves = legalMoves(pos);
  if (depth === 1) return moves.length;
  let n = 0;
  for (const m of moves) {
    const next = play(pos, m);
    if (pos.variant === 'atomic' && kingSquare(next.board, other(pos.turn)) < 0) continue;
    n += perft(next, depth - 1);
  }
  return n;
}
