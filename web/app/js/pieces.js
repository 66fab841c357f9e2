// The piece sets: Frontier's own, drawn here from simple shapes (AGPL-3.0 with the rest).
// Each piece is SVG markup in a 100×100 box; the hidden mark (a purple disc with "?" in a white
// ring and a dark edge, top right) is the same on every set. Seven sets:
//   frontier  — the first set: rounded silhouettes
//   geometric — a shape per role: disc, L, diamond, tower, star, crowned square
//   letters   — the role's letter on a token (K Q R B N P)
//   emblem    — the silhouettes, small, on a coin
//   outline   — line art: White hollow, Black solid
//   pixel     — 12×12 pixel art
//   relief    — the silhouettes raised off the board, with a cast shadow

const BASE = '<rect x="24" y="76" width="52" height="11" rx="3"/>';

const FRONTIER = {
  p: `<circle cx="50" cy="32" r="13"/><path d="M34 77 Q36 52 50 44 Q64 52 66 77 Z"/>${BASE}`,
  r: `<path d="M27 20 h10 v8 h7 v-8 h12 v8 h7 v-8 h10 v20 h-46 Z"/><rect x="33" y="40" width="34" height="37"/>${BASE}`,
  n: `<path d="M30 77 L72 77 Q74 50 64 34 Q58 22 46 16 L44 24 Q32 30 26 48 Q28 56 36 54 L46 46 Q48 58 34 68 Z"/><circle class="eye" cx="44" cy="32" r="3"/>${BASE}`,
  b: `<circle cx="50" cy="15" r="6"/><path d="M36 77 Q28 52 50 22 Q72 52 64 77 Z"/><path class="cut" d="M52 36 L44 52" fill="none" stroke-width="4"/>${BASE}`,
  q: `<path d="M26 77 L18 32 L36 56 L42 22 L50 52 L58 22 L64 56 L82 32 L74 77 Z"/><circle cx="18" cy="30" r="5"/><circle cx="42" cy="20" r="5"/><circle cx="58" cy="20" r="5"/><circle cx="82" cy="30" r="5"/>${BASE}`,
  k: `<rect x="46" y="8" width="8" height="28"/><rect x="37" y="15" width="26" height="8"/><path d="M28 77 Q22 44 50 40 Q78 44 72 77 Z"/>${BASE}`,
};

const star = (n, r1, r2, cx = 50, cy = 50) => {
  const pts = [];
  for (let i = 0; i < n * 2; i++) {
    const a = (Math.PI * i) / n - Math.PI / 2;
    const r = i % 2 ? r2 : r1;
    pts.push(`${(cx + r * Math.cos(a)).toFixed(1)} ${(cy + r * Math.sin(a)).toFixed(1)}`);
  }
  return `M${pts.join(' L')} Z`;
};

const GEOMETRIC = {
  p: '<circle cx="50" cy="56" r="20"/>',
  n: '<path d="M28 84 V18 H54 V46 H76 V84 Z"/>',
  b: '<path d="M50 12 L78 50 L50 88 L22 50 Z"/><path class="cut" d="M40 50 H60" fill="none" stroke-width="5"/>',
  r: '<path d="M22 86 V18 H34 V28 H44 V18 H56 V28 H66 V18 H78 V86 Z"/>',
  q: `<path d="${star(8, 38, 20)}"/>`,
  k: '<rect x="20" y="24" width="60" height="60" rx="6"/><path class="cut" d="M50 32 V76 M34 50 H66" fill="none" stroke-width="7"/><path d="M40 8 H60 V24 H40 Z"/>',
};

const LETTER = { p: 'P', n: 'N', b: 'B', r: 'R', q: 'Q', k: 'K' };

// 12×12 pixel art, one row a line, '#' a pixel.
const BITMAPS = {
  p: ['............', '.....##.....', '....####....', '....####....', '.....##.....', '....####....', '.....##.....', '....####....', '...######...', '..########..', '..########..', '............'],
  r: ['............', '..##.##.##..', '..########..', '...######...', '...######...', '...######...', '...######...', '...######...', '..########..', '.##########.', '.##########.', '............'],
  n: ['............', '.....##.....', '....####....', '...######...', '..###.####..', '..########..', '.....#####..', '....#####...', '...######...', '..########..', '..########..', '............'],
  b: ['............', '.....##.....', '....####....', '...###.##...', '...##.###...', '...######...', '....####....', '.....##.....', '....####....', '..########..', '..########..', '............'],
  q: ['............', '.#...##...#.', '.##..##..##.', '.###.##.###.', '.##########.', '..########..', '...######...', '...######...', '..########..', '.##########.', '.##########.', '............'],
  k: ['.....##.....', '....####....', '.....##.....', '..##.##.##..', '.##########.', '.##########.', '..########..', '...######...', '..########..', '.##########.', '.##########.', '............'],
};

function pixelPath(rows) {
  const u = 100 / 12;
  let d = '';
  rows.forEach((row, y) => {
    for (let x = 0; x < 12; x++) if (row[x] === '#') d += `M${(x * u).toFixed(2)} ${(y * u).toFixed(2)}h${u.toFixed(2)}v${u.toFixed(2)}h-${u.toFixed(2)}Z`;
  });
  return d;
}
const PIXEL = Object.fromEntries(Object.entries(BITMAPS).map(([r, rows]) => {
  const d = pixelPath(rows);
  return [r, `<path class="px-edge" d="${d}"/><path class="px" d="${d}"/>`];
}));

const DRAW = {
  frontier: (r) => FRONTIER[r],
  geometric: (r) => GEOMETRIC[r],
  letters: (r) => `<circle cx="50" cy="52" r="38"/><text class="glyph" x="50" y="68" text-anchor="middle">${LETTER[r]}</text>`,
  emblem: (r) => `<circle cx="50" cy="50" r="42"/><circle class="ring" cx="50" cy="50" r="34" fill="none"/><g class="inner" transform="translate(20 18) scale(.6)">${FRONTIER[r]}</g>`,
  outline: (r) => FRONTIER[r],
  pixel: (r) => PIXEL[r],
  relief: (r) => `<g class="shade" transform="translate(5 5)">${FRONTIER[r]}</g>${FRONTIER[r]}`,
};

export const PIECE_SETS = Object.keys(DRAW);
let current = 'frontier';

/** Chooses the set every piece is drawn in from now on (unknown names: the first set). */
export function setPieceSet(name) {
  current = DRAW[name] ? name : 'frontier';
}

export const pieceSet = () => current;

/** SVG markup of a piece at (x, y) with size `s`. `hidden` adds the hidden mark. */
export function pieceSvg(piece, x, y, s, extra = '') {
  const cls = `piece set-${current} ${piece.color === 'w' ? 'white' : 'black'}${piece.hidden ? ' hidden' : ''}`;
  const mark = piece.hidden
    ? `<g class="hidden-mark"><circle class="edge" cx="80" cy="20" r="18.5"/><circle cx="80" cy="20" r="15"/><text x="80" y="27" text-anchor="middle">?</text></g>`
    : '';
  return `<g class="${cls}" transform="translate(${x} ${y}) scale(${s / 100})" ${extra}>${DRAW[current](piece.role)}${mark}</g>`;
}

/** A standalone SVG image of a piece (captured lists, dialogs). */
export function pieceIcon(color, role, size = 28, hidden = false) {
  return `<svg class="icon" width="${size}" height="${size}" viewBox="0 0 100 100" aria-hidden="true">${pieceSvg({ color, role, hidden }, 0, 0, 100)}</svg>`;
}
