// The piece set: Frontier's own, drawn here from simple shapes (AGPL-3.0 with the rest).
// Each piece is SVG markup in a 100×100 box.

const BASE = '<rect x="24" y="76" width="52" height="11" rx="3"/>';

const SHAPES = {
  p: `<circle cx="50" cy="32" r="13"/><path d="M34 77 Q36 52 50 44 Q64 52 66 77 Z"/>${BASE}`,
  r: `<path d="M27 20 h10 v8 h7 v-8 h12 v8 h7 v-8 h10 v20 h-46 Z"/><rect x="33" y="40" width="34" height="37"/>${BASE}`,
  n: `<path d="M30 77 L72 77 Q74 50 64 34 Q58 22 46 16 L44 24 Q32 30 26 48 Q28 56 36 54 L46 46 Q48 58 34 68 Z"/><circle class="eye" cx="44" cy="32" r="3"/>${BASE}`,
  b: `<circle cx="50" cy="15" r="6"/><path d="M36 77 Q28 52 50 22 Q72 52 64 77 Z"/><path class="cut" d="M52 36 L44 52" fill="none" stroke-width="4"/>${BASE}`,
  q: `<path d="M26 77 L18 32 L36 56 L42 22 L50 52 L58 22 L64 56 L82 32 L74 77 Z"/><circle cx="18" cy="30" r="5"/><circle cx="42" cy="20" r="5"/><circle cx="58" cy="20" r="5"/><circle cx="82" cy="30" r="5"/>${BASE}`,
  k: `<rect x="46" y="8" width="8" height="28"/><rect x="37" y="15" width="26" height="8"/><path d="M28 77 Q22 44 50 40 Q78 44 72 77 Z"/>${BASE}`,
};

/** SVG markup of a piece at (x, y) with size `s`. `hidden` adds the hidden mark. */
export function pieceSvg(piece, x, y, s, extra = '') {
  const cls = `piece ${piece.color === 'w' ? 'white' : 'black'}${piece.hidden ? ' hidden' : ''}`;
  const mark = piece.hidden
    ? `<g class="hidden-mark"><circle cx="80" cy="20" r="15"/><text x="80" y="27" text-anchor="middle">?</text></g>`
    : '';
  return `<g class="${cls}" transform="translate(${x} ${y}) scale(${s / 100})" ${extra}>${SHAPES[piece.role]}${mark}</g>`;
}

/** A standalone SVG image of a piece (captured lists, dialogs). */
export function pieceIcon(color, role, size = 28, hidden = false) {
  return `<svg class="icon" width="${size}" height="${size}" viewBox="0 0 100 100" aria-hidden="true">${pieceSvg({ color, role, hidden }, 0, 0, 100)}</svg>`;
}
