// The 2D board: an SVG of 64 focusable squares (each labelled for screen readers), the
// pieces of the server's position, and the marks of the game: last move, check, selected
// piece, legal destinations, hidden pieces, a reveal as it happens, an explosion. Moves are
// made by dragging or by two clicks (or Enter on two squares).

import { parseFen, squareName, fileOf, rankOf } from './chess.js';
import { pieceSvg } from './pieces.js';
import { t, roleName } from './i18n.js';

const S = 100;

export class BoardView {
  /**
   * `onMove(from, to)` is called for a move the caller's `legalFrom(from)` allowed.
   */
  constructor(el, { onMove, legalFrom }) {
    this.el = el;
    this.onMove = onMove;
    this.legalFrom = legalFrom;
    this.selected = -1;
    this.drag = null;
    this.opts = null;
    el.addEventListener('pointerdown', (e) => this.pointerDown(e));
    el.addEventListener('pointermove', (e) => this.pointerMove(e));
    el.addEventListener('pointerup', (e) => this.pointerUp(e));
    el.addEventListener('keydown', (e) => {
      const sq = e.target.closest && e.target.closest('[data-square]');
      if (sq && (e.key === 'Enter' || e.key === ' ')) {
        e.preventDefault();
        this.clickSquare(Number(sq.dataset.index));
      }
    });
  }

  /** Draws `opts`: {fen, variant, orientation, last:[from,to], movable, exploded:[…], revealed: sq}. */
  set(opts) {
    this.opts = opts;
    this.pos = parseFen(opts.fen, opts.variant);
    if (this.selected >= 0 && !this.canPick(this.selected)) this.selected = -1;
    this.draw();
  }

  canPick(sq) {
    return !!(this.opts && this.opts.movable && this.legalFrom(sq).length);
  }

  xy(sq) {
    const white = this.opts.orientation !== 'black';
    const f = white ? fileOf(sq) : 7 - fileOf(sq);
    const r = white ? 7 - rankOf(sq) : rankOf(sq);
    return [f * S, r * S];
  }

  draw() {
    const o = this.opts;
    const pos = this.pos;
    const dests = this.selected >= 0 ? this.legalFrom(this.selected) : [];
    const checkSq = o.check ? pos.board.findIndex((p) => p && p.role === 'k' && p.color === pos.turn) : -1;
    let squares = '';
    let pieces = '';
    for (let sq = 0; sq < 64; sq++) {
      const [x, y] = this.xy(sq);
      const light = (fileOf(sq) + rankOf(sq)) % 2 === 1;
      const p = pos.board[sq];
      const cls = ['sq', light ? 'light' : 'dark'];
      if (o.last && o.last.includes(sq)) cls.push('last');
      if (sq === this.selected) cls.push('selected');
      if (sq === checkSq) cls.push('check');
      if (dests.includes(sq)) cls.push(p ? 'dest capture' : 'dest');
      if (o.revealed === sq) cls.push('revealed');
      const label = `${squareName(sq)}, ${p ? `${t(p.color === 'w' ? 'white' : 'black')} ${roleName(p.role)}${p.hidden ? ` (${t('hiddenPiece')})` : ''}` : t('emptySquare')}`;
      squares += `<g class="${cls.join(' ')}" data-square="${squareName(sq)}" data-index="${sq}" tabindex="0" role="button" aria-label="${label}"><rect x="${x}" y="${y}" width="${S}" height="${S}"/>`;
      if (dests.includes(sq)) squares += p ? `<circle class="hint ring" cx="${x + 50}" cy="${y + 50}" r="44"/>` : `<circle class="hint" cx="${x + 50}" cy="${y + 50}" r="14"/>`;
      if (o.revealed === sq) squares += `<rect class="reveal-flash" x="${x}" y="${y}" width="${S}" height="${S}"/>`;
      squares += '</g>';
      if (p && !(this.drag && this.drag.from === sq && this.drag.moved)) {
        const extra = `data-piece="${p.color}${p.role}" data-on="${squareName(sq)}"${p.hidden ? ' data-hidden="1"' : ''}`;
        pieces += pieceSvg(p, x, y, S, extra);
      }
    }
    const coords = [];
    for (let i = 0; i < 8; i++) {
      const file = o.orientation === 'black' ? 'hgfedcba'[i] : 'abcdefgh'[i];
      const rank = o.orientation === 'black' ? i + 1 : 8 - i;
      coords.push(`<text class="coord" x="${i * S + 92}" y="795">${file}</text><text class="coord" x="4" y="${i * S + 18}">${rank}</text>`);
    }
    let booms = '';
    for (const sq of o.exploded || []) {
      const [x, y] = this.xy(sq);
      booms += `<circle class="boom" data-boom="${squareName(sq)}" cx="${x + 50}" cy="${y + 50}" r="10"/>`;
    }
    let ghost = '';
    if (this.drag && this.drag.moved) {
      const p = pos.board[this.drag.from];
      ghost = pieceSvg(p, this.drag.x - 50, this.drag.y - 50, S, 'class="ghost"');
    }
    this.el.innerHTML = `<svg class="board-svg" viewBox="0 0 800 800" role="grid" aria-label="${t('board')}">${squares}${coords.join('')}<g class="pieces">${pieces}</g>${booms}${ghost}</svg>`;
  }

  pointToSquare(e) {
    const svg = this.el.querySelector('svg');
    if (!svg) return -1;
    const r = svg.getBoundingClientRect();
    const x = ((e.clientX - r.left) / r.width) * 800;
    const y = ((e.clientY - r.top) / r.height) * 800;
    if (x < 0 || y < 0 || x >= 800 || y >= 800) return -1;
    let f = Math.floor(x / S);
    let rank = 7 - Math.floor(y / S);
    if (this.opts.orientation === 'black') {
      f = 7 - f;
      rank = 7 - rank;
    }
    return rank * 8 + f;
  }

  svgPoint(e) {
    const r = this.el.querySelector('svg').getBoundingClientRect();
    return [((e.clientX - r.left) / r.width) * 800, ((e.clientY - r.top) / r.height) * 800];
  }

  pointerDown(e) {
    if (!this.opts) return;
    const sq = this.pointToSquare(e);
    if (sq < 0) return;
    if (this.canPick(sq)) {
      const [x, y] = this.svgPoint(e);
      this.drag = { from: sq, x, y, startX: e.clientX, startY: e.clientY, moved: false };
      this.el.setPointerCapture && this.el.setPointerCapture(e.pointerId);
    }
  }

  pointerMove(e) {
    if (!this.drag) return;
    if (!this.drag.moved && Math.hypot(e.clientX - this.drag.startX, e.clientY - this.drag.startY) < 6) return;
    const [x, y] = this.svgPoint(e);
    this.drag.x = x;
    this.drag.y = y;
    if (!this.drag.moved) {
      this.drag.moved = true;
      this.selected = this.drag.from;
    }
    this.draw();
  }

  pointerUp(e) {
    const drag = this.drag;
    this.drag = null;
    if (this.afterDrag) {
      // The game changed during the drag: the move is judged on the new state.
      const redraw = this.afterDrag;
      this.afterDrag = null;
      setTimeout(redraw, 0);
    }
    const sq = this.pointToSquare(e);
    if (drag && drag.moved) {
      this.selected = -1;
      if (sq >= 0 && sq !== drag.from) this.tryMove(drag.from, sq);
      else this.draw();
      return;
    }
    if (sq >= 0) this.clickSquare(sq);
  }

  clickSquare(sq) {
    if (this.selected >= 0 && this.selected !== sq && this.legalFrom(this.selected).includes(sq)) {
      const from = this.selected;
      this.selected = -1;
      this.tryMove(from, sq);
      return;
    }
    this.selected = this.selected === sq || !this.canPick(sq) ? -1 : sq;
    this.draw();
    const focus = this.el.querySelector(`[data-index="${sq}"]`);
    if (focus) focus.focus();
  }

  tryMove(from, to) {
    this.draw();
    this.onMove(from, to);
  }
}
