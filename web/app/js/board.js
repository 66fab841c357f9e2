// The 2D board: an SVG of 64 focusable squares (each labelled for screen readers), the
// pieces of the server's position, and the marks of the game: last move, check, selected
// piece, legal destinations, a premove, hidden pieces. A move as it arrives is animated: the
// piece slides, a captured piece shrinks away, a revealed piece turns over, an explosion
// bursts (none of it where the player asked for reduced motion, but for the explosion's
// and the reveal's still marks). Moves are made by dragging or by two clicks (or Enter on
// two squares).

import { parseFen, squareName, fileOf, rankOf } from './chess.js';
import { pieceSvg } from './pieces.js';
import { t, roleName } from './i18n.js';

const S = 100;

// The board looks: the first three are plain colours; the seven others add a texture drawn
// over the squares (SVG noise and patterns), their colours in app.css.
export const BOARD_LOOKS = ['green', 'brown', 'blue', 'felt', 'marble', 'sandstone', 'glacier', 'amber', 'tidepool', 'chamber'];

/** A layer of noise: the noise's red channel times `a` plus `off` as the opacity of colour (r, g, b). */
const noise = (type, freq, octaves, [r, g, b], a, off, seed = 3) =>
  `<filter x="0" y="0" width="100%" height="100%"><feTurbulence type="${type}" baseFrequency="${freq}" numOctaves="${octaves}" seed="${seed}"/><feColorMatrix values="0 0 0 0 ${r} 0 0 0 0 ${g} 0 0 0 0 ${b} ${a} 0 0 0 ${off}"/></filter>`;
const BRICKS = '<pattern width="200" height="100" patternUnits="userSpaceOnUse"><path d="M0 1H200M0 50H200M1 0V50M100 50V100" stroke="rgba(20,15,10,.5)" stroke-width="4" fill="none"/></pattern>';
const BUBBLES = '<pattern width="230" height="190" patternUnits="userSpaceOnUse"><g fill="rgba(255,240,200,.25)" stroke="rgba(255,250,230,.6)" stroke-width="2"><circle cx="40" cy="50" r="9"/><circle cx="150" cy="30" r="5"/><circle cx="120" cy="140" r="12"/><circle cx="200" cy="110" r="4"/><circle cx="60" cy="160" r="6"/></g></pattern>';
const TEXTURES = {
  felt: [noise('fractalNoise', 0.8, 3, [0, 0, 0], 0.55, -0.15), noise('fractalNoise', 0.35, 2, [1, 1, 1], 0.35, -0.12, 9)],
  marble: [noise('fractalNoise', 0.012, 3, [1, 1, 1], 0.6, -0.2, 5), noise('turbulence', '0.004 0.014', 3, [0.25, 0.27, 0.27], -4, 0.55, 11)],
  sandstone: [noise('fractalNoise', '0.003 0.05', 3, [0.45, 0.25, 0.1], 1, -0.35, 4), noise('fractalNoise', 1.1, 2, [0.3, 0.18, 0.08], 0.6, -0.22)],
  glacier: [noise('fractalNoise', 0.012, 3, [1, 1, 1], 1.4, -0.5, 8), noise('turbulence', 0.018, 2, [0.9, 0.97, 1], -5, 0.5, 2)],
  amber: [noise('fractalNoise', 0.015, 3, [0.45, 0.18, 0], 1.1, -0.4, 6), BUBBLES],
  tidepool: [noise('fractalNoise', 0.006, 2, [0, 0.18, 0.3], 0.9, -0.3, 12), noise('turbulence', '0.012 0.02', 2, [1, 1, 1], -4, 0.5, 7)],
  chamber: [BRICKS, noise('fractalNoise', 0.7, 3, [0, 0, 0], 0.6, -0.18, 13)],
};

/** The texture layers of a look over the 800×800 board (none for the plain ones). */
function texture(look) {
  return (TEXTURES[look] || [])
    .map((layer, i) => {
      const id = `tex-${look}-${i}`;
      const def = layer.replace(/^<(filter|pattern)/, `<$1 id="${id}"`);
      const use = layer.startsWith('<filter') ? `filter="url(#${id})"` : `fill="url(#${id})"`;
      return `<defs>${def}</defs><rect class="texture" x="0" y="0" width="800" height="800" ${use}/>`;
    })
    .join('');
}
/**
 * A board look alone, as a standalone SVG (the squares in `light` and `dark`, the look's
 * texture over them): the 3D board's top (board3d.js) is made from it.
 */
export function boardLookSvg(look, light, dark) {
  let squares = '';
  for (let sq = 0; sq < 64; sq++) {
    const x = fileOf(sq) * S;
    const y = (7 - rankOf(sq)) * S;
    squares += `<rect x="${x}" y="${y}" width="${S}" height="${S}" fill="${(fileOf(sq) + rankOf(sq)) % 2 === 1 ? light : dark}"/>`;
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="800" height="800" viewBox="0 0 800 800">${squares}${texture(look)}</svg>`;
}

const SLIDE_MS = 220;
const reducedMotion = () => !!(window.matchMedia && window.matchMedia('(prefers-reduced-motion: reduce)').matches);

export class BoardView {
  /**
   * `onMove(from, to)` is called for a move the caller's `legalFrom(from)` allowed.
   */
  constructor(el, { onMove, legalFrom, onCancel }) {
    this.el = el;
    this.onMove = onMove;
    this.legalFrom = legalFrom;
    this.onCancel = onCancel;
    this.selected = -1;
    this.drag = null;
    this.opts = null;
    el.addEventListener('pointerdown', (e) => this.pointerDown(e));
    el.addEventListener('pointermove', (e) => this.pointerMove(e));
    el.addEventListener('pointerup', (e) => this.pointerUp(e));
    // A right click cancels a premove (and a selection) instead of the browser's menu.
    el.addEventListener('contextmenu', (e) => {
      e.preventDefault();
      this.selected = -1;
      if (this.drag) this.drag = null;
      if (!(this.onCancel && this.onCancel()) && this.opts) this.draw();
    });
    el.addEventListener('keydown', (e) => {
      const sq = e.target.closest && e.target.closest('[data-square]');
      if (sq && (e.key === 'Enter' || e.key === ' ')) {
        e.preventDefault();
        this.clickSquare(Number(sq.dataset.index));
      }
    });
  }

  /**
   * Draws `opts`: {fen, variant, orientation, last:[from,to], movable, premove:[from,to],
   * exploded:[…], revealed: sq, anim: {at, slide:[from,to], captured: piece}} (`at`: when the
   * move arrived; a redraw during an animation continues it where it stands).
   */
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
    const still = reducedMotion();
    const elapsed = o.anim ? Date.now() - o.anim.at : Infinity;
    const delay = `style="animation-delay:-${Math.min(elapsed, 5000)}ms"`;
    const slide = !still && o.anim && o.anim.slide && elapsed < SLIDE_MS && pos.board[o.anim.slide[1]] ? o.anim.slide : null;
    let squares = '';
    let pieces = '';
    if (!still && o.anim && o.anim.captured && elapsed < 500 && o.anim.slide) {
      const [x, y] = this.xy(o.anim.slide[1]);
      pieces += `<g class="captured-fade" data-anim="capture" ${delay}>${pieceSvg(o.anim.captured, x, y, S)}</g>`;
    }
    for (let sq = 0; sq < 64; sq++) {
      const [x, y] = this.xy(sq);
      const light = (fileOf(sq) + rankOf(sq)) % 2 === 1;
      let p = pos.board[sq];
      // A hidden piece turned over at the end of the game: what it was, marked as such.
      const unveiled = p && p.hidden && o.unveil && o.unveil[sq] && o.unveil[sq].color === p.color;
      if (unveiled) p = { color: p.color, role: o.unveil[sq].role, hidden: false };
      const cls = ['sq', light ? 'light' : 'dark'];
      if (o.last && o.last.includes(sq)) cls.push('last');
      if (sq === this.selected) cls.push('selected');
      if (sq === checkSq) cls.push('check');
      if (dests.includes(sq)) cls.push(p ? 'dest capture' : 'dest');
      if (o.revealed === sq) cls.push('revealed');
      if (o.premove && o.premove.includes(sq)) cls.push('premove');
      const label = `${squareName(sq)}, ${p ? `${t(p.color === 'w' ? 'white' : 'black')} ${roleName(p.role)}${p.hidden ? ` (${t('hiddenPiece')})` : ''}` : t('emptySquare')}`;
      squares += `<g class="${cls.join(' ')}" data-square="${squareName(sq)}" data-index="${sq}" tabindex="0" role="button" aria-label="${label}"><rect x="${x}" y="${y}" width="${S}" height="${S}"/>`;
      if (dests.includes(sq)) squares += p ? `<circle class="hint ring" cx="${x + 50}" cy="${y + 50}" r="44"/>` : `<circle class="hint" cx="${x + 50}" cy="${y + 50}" r="14"/>`;
      if (o.revealed === sq) squares += `<rect class="reveal-flash" ${delay} x="${x}" y="${y}" width="${S}" height="${S}"/>`;
      if (unveiled) squares += `<rect class="unveil" x="${x + 5}" y="${y + 5}" width="${S - 10}" height="${S - 10}"/>`;
      squares += '</g>';
      if (p && !(this.drag && this.drag.from === sq && this.drag.moved)) {
        const extra = `data-piece="${p.color}${p.role}" data-on="${squareName(sq)}"${p.hidden ? ' data-hidden="1"' : ''}${unveiled ? ' data-unveiled="1"' : ''}`;
        if (slide && slide[1] === sq) {
          const [fx, fy] = this.xy(slide[0]);
          const k = ease(elapsed / SLIDE_MS);
          const moving = pieceSvg(p, fx + (x - fx) * k, fy + (y - fy) * k, S, `${extra} data-anim="slide"`);
          // A piece revealed by its move turns over once it has arrived.
          pieces += o.revealed === sq ? `<g class="revealing" data-anim="reveal" style="animation-delay:${SLIDE_MS - elapsed}ms">${moving}</g>` : moving;
        } else if (!still && o.revealed === sq && elapsed < 600) {
          pieces += `<g class="revealing" data-anim="reveal" ${delay}>${pieceSvg(p, x, y, S, extra)}</g>`;
        } else pieces += pieceSvg(p, x, y, S, extra);
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
      booms += `<circle class="boom" ${delay} data-boom="${squareName(sq)}" cx="${x + 50}" cy="${y + 50}" r="10"/>`;
      if (!still) {
        // Debris flying out of the blast, one spark per direction.
        const sparks = [0, 45, 90, 135, 180, 225, 270, 315].map((a) => `<line x1="0" y1="0" x2="0" y2="-16" transform="rotate(${a})"/>`).join('');
        booms += `<g class="debris" data-anim="explode" transform="translate(${x + 50} ${y + 50})"><g ${delay}>${sparks}</g></g>`;
      }
    }
    let ghost = '';
    if (this.drag && this.drag.moved) {
      const p = pos.board[this.drag.from];
      ghost = pieceSvg(p, this.drag.x - 50, this.drag.y - 50, S, 'class="ghost"');
    }
    const look = document.documentElement.dataset.theme;
    this.el.innerHTML = `<svg class="board-svg look-${look}" viewBox="0 0 800 800" role="group" aria-label="${t('board')}">${squares}${texture(look)}${coords.join('')}<g class="pieces">${pieces}</g>${booms}${ghost}</svg>`;
    if (slide) this.slideOn(o.anim, slide);
  }

  /** Moves the sliding piece frame by frame until it stands on its square. */
  slideOn(anim, [from, to]) {
    const [fx, fy] = this.xy(from);
    const [tx, ty] = this.xy(to);
    const step = () => {
      const el = this.el.querySelector('[data-anim="slide"]');
      if (!el || !this.el.isConnected || this.opts.anim !== anim) return;
      const k = ease(Math.min(1, (Date.now() - anim.at) / SLIDE_MS));
      el.setAttribute('transform', `translate(${fx + (tx - fx) * k} ${fy + (ty - fy) * k}) scale(${S / 100})`);
      if (k < 1) requestAnimationFrame(step);
    };
    requestAnimationFrame(step);
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
    if (!this.opts || e.button > 0) return;
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
      if (sq >= 0 && sq !== drag.from) this.tryMove(drag.from, sq, true);
      else this.draw();
      return;
    }
    if (sq >= 0 && e.button <= 0) this.clickSquare(sq);
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

  tryMove(from, to, dragged = false) {
    this.draw();
    this.onMove(from, to, dragged);
  }
}

/** Ease-out: quick off the square, gentle onto the next. */
const ease = (k) => 1 - (1 - Math.min(1, Math.max(0, k))) ** 3;
