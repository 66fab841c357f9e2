// The 3D board (three.js, web/app/vendor/): loaded only when a player chooses 3D (main.js
// imports this module dynamically), so a player of the 2D board downloads none of it.
//
// One WebGL renderer for the page's life: its canvas is moved into each new #board the
// game screen draws, so a move costs no new context. Drawn on demand only (a change, an
// animation, the camera moving), at pixel ratio 1, without shadows; the pieces are our own
// low-poly lathe and extrusion models. The board's top is one texture made from the board
// look's own 2D drawing (colours and texture, board.js), with the coordinates on its frame;
// the marks of the game (last move, check, selection, destinations, premove) lie over it.
// Hidden pieces wear the same purple "?" as in 2D, always facing the camera, and a purple
// ring at their foot. A move is animated as in 2D: a slide (with a hop), a capture sinking,
// a reveal turning the piece round, an explosion's blast and debris.
//
// Moves: a click on a piece then one on a square (raycast: a piece, else the board's plane),
// or a drag of the piece. Dragging elsewhere orbits the camera (within limits), the wheel
// zooms (within limits), a right click cancels a premove.

import * as THREE from '../vendor/three.module.min.js';
import { parseFen, squareName, parseSquare, fileOf, rankOf } from './chess.js';
import { t } from './i18n.js';
import { pieceSet } from './pieces.js';
import { boardLookSvg } from './board.js';

const SLIDE_MS = 220;
const reducedMotion = () => !!(window.matchMedia && window.matchMedia('(prefers-reduced-motion: reduce)').matches);
const ease = (k) => 1 - (1 - Math.min(1, Math.max(0, k))) ** 3;

/** Whether this browser can draw the 3D board (three.js needs WebGL 2). */
export function webglAvailable() {
  try {
    const c = document.createElement('canvas');
    const gl = c.getContext('webgl2');
    if (!gl) return false;
    const lose = gl.getExtension('WEBGL_lose_context');
    if (lose) lose.loseContext();
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------- the pieces' models

/** A lathe profile's foot: a round base of radius `r`. */
const foot = (r) => [[0, 0], [r, 0], [r, 0.05], [r * 0.9, 0.08], [r * 0.72, 0.11]];

const PROFILES = {
  p: [...foot(0.3), [0.2, 0.16], [0.13, 0.3], [0.11, 0.36], [0.18, 0.38], [0.18, 0.41], [0.1, 0.43], [0.14, 0.46], [0.16, 0.52], [0.14, 0.58], [0.08, 0.62], [0, 0.63]],
  r: [...foot(0.33), [0.24, 0.16], [0.2, 0.28], [0.2, 0.5], [0.25, 0.53], [0.25, 0.68], [0.17, 0.68], [0.17, 0.62], [0, 0.62]],
  b: [...foot(0.31), [0.19, 0.17], [0.12, 0.38], [0.1, 0.48], [0.18, 0.5], [0.18, 0.53], [0.12, 0.55], [0.17, 0.62], [0.17, 0.69], [0.12, 0.77], [0.05, 0.83], [0.06, 0.85], [0.06, 0.88], [0, 0.9]],
  q: [...foot(0.34), [0.22, 0.17], [0.13, 0.42], [0.11, 0.6], [0.2, 0.63], [0.2, 0.66], [0.13, 0.69], [0.16, 0.8], [0.23, 0.92], [0.16, 0.9], [0.08, 0.95], [0.07, 0.98], [0.06, 1.02], [0, 1.04]],
  k: [...foot(0.34), [0.22, 0.17], [0.14, 0.42], [0.12, 0.62], [0.21, 0.65], [0.21, 0.68], [0.14, 0.71], [0.18, 0.86], [0.2, 0.94], [0, 0.96]],
  n: [...foot(0.32), [0.24, 0.16], [0.22, 0.22], [0, 0.22]],
};
/** Each model's height: where the hidden mark floats above it. */
const HEIGHT = { p: 0.63, r: 0.68, b: 0.9, q: 1.04, k: 1.2, n: 0.92 };

/** The knight's head in profile (facing −x), extruded. */
function knightHead() {
  const s = new THREE.Shape();
  const pts = [[0.2, 0.2], [0.2, 0.55], [0.12, 0.78], [0.02, 0.9], [-0.02, 0.86], [-0.12, 0.8], [-0.26, 0.62], [-0.27, 0.54], [-0.2, 0.5], [-0.08, 0.56], [-0.02, 0.5], [-0.14, 0.32], [-0.16, 0.2]];
  s.moveTo(...pts[0]);
  for (const p of pts.slice(1)) s.lineTo(...p);
  s.closePath();
  const g = new THREE.ExtrudeGeometry(s, { depth: 0.2, bevelEnabled: false });
  g.translate(0, 0, -0.1);
  return g;
}

/** The geometries of one piece set's style (smooth, faceted, blocky): built once each. */
const geometryCache = new Map();
function geometries(segments) {
  if (geometryCache.has(segments)) return geometryCache.get(segments);
  const out = {};
  for (const [role, profile] of Object.entries(PROFILES)) {
    out[role] = [new THREE.LatheGeometry(profile.map(([x, y]) => new THREE.Vector2(x, y)), segments)];
  }
  out.n.push(knightHead());
  // The king's cross.
  const bar = new THREE.BoxGeometry(0.06, 0.26, 0.06);
  bar.translate(0, 1.06, 0);
  const arm = new THREE.BoxGeometry(0.18, 0.06, 0.06);
  arm.translate(0, 1.1, 0);
  out.k.push(bar, arm);
  geometryCache.set(segments, out);
  return out;
}

// The seven piece sets, in 3D: each a style of its own (colours, facets, smoothness).
const SETS = {
  frontier: { segments: 12, white: 0xf3ead8, black: 0x2b2b2b },
  geometric: { segments: 6, flat: true, white: 0xfafafa, black: 0x30343a },
  letters: { segments: 10, white: 0xfff6e0, black: 0x1f2a44 },
  emblem: { segments: 16, white: 0xe2c25a, black: 0x8e98a3 },
  outline: { segments: 8, flat: true, white: 0xffffff, black: 0x111111 },
  pixel: { segments: 4, flat: true, white: 0xe8e8e8, black: 0x3a3a3a },
  relief: { segments: 12, white: 0xe3c28f, black: 0x5b3a22 },
};

const materialCache = new Map();
function materials(set) {
  if (materialCache.has(set)) return materialCache.get(set);
  const s = SETS[set] || SETS.frontier;
  const make = (color) => new THREE.MeshLambertMaterial({ color, flatShading: !!s.flat });
  const m = { w: make(s.white), b: make(s.black) };
  materialCache.set(set, m);
  return m;
}

/** A square drawn on a canvas as a sprite's texture. */
function spriteTexture(draw) {
  const c = document.createElement('canvas');
  c.width = c.height = 128;
  draw(c.getContext('2d'));
  const tex = new THREE.CanvasTexture(c);
  tex.colorSpace = THREE.SRGBColorSpace;
  return tex;
}

// The hidden mark, as in 2D: a purple disc with a white rim in a dark edge, and "?" (the
// rim or the edge stands 3:1 against any square behind it). Every hidden piece's
// mark is one point of a single Points object (one draw call), always facing the camera and
// drawn over everything; a piece taken while hidden sinks with a sprite of its own.
let markTexture = null;
function hiddenMarkTexture() {
  markTexture ||= spriteTexture((g) => {
    g.fillStyle = '#1b0a24';
    g.beginPath();
    g.arc(64, 64, 63, 0, Math.PI * 2);
    g.fill();
    g.fillStyle = '#7b1fa2';
    g.strokeStyle = '#fff';
    g.lineWidth = 12;
    g.beginPath();
    g.arc(64, 64, 50, 0, Math.PI * 2);
    g.fill();
    g.stroke();
    g.fillStyle = '#fff';
    g.font = 'bold 84px system-ui, sans-serif';
    g.textAlign = 'center';
    g.textBaseline = 'middle';
    g.fillText('?', 64, 70);
  });
  return markTexture;
}
let markPointsMaterial = null;
let markSpriteMaterial = null;
const MARK_SIZE = 0.42;
const FOV = 38;
function hiddenMarks(points) {
  // A point's size is scaled by the viewport's half height over depth, not by the field of
  // view: divided by tan(fov / 2), it is as large as a sprite of MARK_SIZE would be.
  markPointsMaterial ||= new THREE.PointsMaterial({ map: hiddenMarkTexture(), size: MARK_SIZE / Math.tan(THREE.MathUtils.degToRad(FOV / 2)), sizeAttenuation: true, transparent: true, alphaTest: 0.05, depthTest: false });
  const g = new THREE.BufferGeometry();
  g.setAttribute('position', new THREE.Float32BufferAttribute(points.flatMap((v) => [v.x, v.y, v.z]), 3));
  const marks = new THREE.Points(g, markPointsMaterial);
  marks.renderOrder = 10;
  return marks;
}
function hiddenMark() {
  markSpriteMaterial ||= new THREE.SpriteMaterial({ map: hiddenMarkTexture(), depthTest: false, transparent: true });
  const s = new THREE.Sprite(markSpriteMaterial);
  s.scale.set(MARK_SIZE, MARK_SIZE, 1);
  s.renderOrder = 10;
  return s;
}

// ---------------------------------------------------------------- the board's marks

const flat = (geometry) => {
  geometry.rotateX(-Math.PI / 2);
  return geometry;
};
const SQUARE = flat(new THREE.PlaneGeometry(1, 1));
const DOT = flat(new THREE.CircleGeometry(0.14, 20));
const RING = flat(new THREE.RingGeometry(0.38, 0.46, 32));
const FOOT_RING = flat(new THREE.RingGeometry(0.34, 0.42, 20));
const FIREBALL = new THREE.SphereGeometry(0.5, 12, 8);
const DEBRIS = new THREE.BoxGeometry(0.08, 0.08, 0.08);
const DEBRIS_DARK = new THREE.MeshBasicMaterial({ color: 0x5a3a1a });
const DEBRIS_BRIGHT = new THREE.MeshBasicMaterial({ color: 0xffb300 });
const mark = (color, opacity) => new THREE.MeshBasicMaterial({ color, opacity, transparent: true, depthWrite: false });
const MARKS = {
  last: mark(0xf5e663, 0.5),
  selected: mark(0x2e7d32, 0.55),
  check: mark(0xdc1e1e, 0.65),
  premove: mark(0x3f51b5, 0.5),
  dest: mark(0x14551e, 0.5),
  hidden: mark(0x7b1fa2, 0.9),
  unveil: mark(0xffc107, 0.9),
  scorch: mark(0xff6d00, 0.85),
};

/** The centre of a square on the board (a1 at −x, +z: nearest White's side). */
const at = (sq, y = 0) => new THREE.Vector3(fileOf(sq) - 3.5, y, 3.5 - rankOf(sq));

export class Board3D {
  constructor() {
    this.renderer = new THREE.WebGLRenderer({ antialias: false, alpha: true, powerPreference: 'low-power' });
    this.renderer.setPixelRatio(1);
    this.renderer.outputColorSpace = THREE.SRGBColorSpace;
    this.canvas = this.renderer.domElement;
    this.canvas.className = 'board-3d';
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute('role', 'img');
    this.scene = new THREE.Scene();
    this.camera = new THREE.PerspectiveCamera(FOV, 1, 0.1, 100);
    this.scene.add(new THREE.HemisphereLight(0xffffff, 0x444444, 1.6));
    const sun = new THREE.DirectionalLight(0xffffff, 1.8);
    sun.position.set(-4, 10, 6);
    this.scene.add(sun);
    // The board: one textured top (9×9: the squares and a frame with the coordinates), on a slab.
    this.topMaterial = new THREE.MeshBasicMaterial({ color: 0xffffff });
    this.top = new THREE.Mesh(flat(new THREE.PlaneGeometry(9, 9)), this.topMaterial);
    this.scene.add(this.top);
    this.slabMaterial = new THREE.MeshLambertMaterial({ color: 0x4a3b2a });
    const slab = new THREE.Mesh(new THREE.BoxGeometry(9, 0.3, 9), this.slabMaterial);
    slab.position.y = -0.151;
    this.scene.add(slab);
    this.marks = new THREE.Group();
    this.pieces = new THREE.Group();
    this.effects = new THREE.Group();
    this.scene.add(this.marks, this.pieces, this.effects);
    // The camera: around the board's centre; `yaw` from the player's side, `pitch` from above.
    this.yaw = 0;
    this.pitch = 0.72;
    this.distance = 15.5;
    this.selected = -1;
    this.drag = null;
    this.opts = null;
    this.look = null;
    this.lookKey = '';
    this.lookReady = null;
    this.frameRequested = false;
    // For the tests and the performance figures: renders made, every animation and blast seen.
    this.stats = { renders: 0, renderMs: [], renderAt: [] };
    this.seenAnims = new Set();
    this.log = { booms: [], captures: [], reveals: [] };
    this.logged = new Set();
    this.raycaster = new THREE.Raycaster();
    this.plane = new THREE.Plane(new THREE.Vector3(0, 1, 0), 0);
    this.bindInput();
    this.resizeObserver = new ResizeObserver(() => this.resize());
  }

  /** Puts the canvas into `el` (a new #board), with the game's callbacks. */
  attach(el, { onMove, legalFrom, onCancel }) {
    if (this.el && this.el !== el) this.resizeObserver.unobserve(this.el);
    this.el = el;
    this.onMove = onMove;
    this.legalFrom = legalFrom;
    this.onCancel = onCancel;
    this.selected = -1;
    this.drag = null;
    this.afterDrag = null;
    el.classList.add('is-3d');
    el.appendChild(this.canvas);
    this.canvas.setAttribute('aria-label', t('board3d'));
    this.resizeObserver.observe(el);
    this.resize(false);
  }

  resize(draw = true) {
    if (!this.el) return;
    const w = Math.max(1, Math.round(this.el.clientWidth));
    const h = Math.max(1, Math.round(this.el.clientHeight || w));
    if (this.size && this.size[0] === w && this.size[1] === h) return;
    this.size = [w, h];
    this.scale = 1;
    this.renderer.setSize(w, h, false);
    this.camera.aspect = w / h;
    this.camera.updateProjectionMatrix();
    if (draw && this.opts) this.render();
  }

  /** The same options as BoardView.set (board.js). */
  set(opts) {
    const turned = !this.opts || this.opts.orientation !== opts.orientation;
    this.opts = opts;
    this.pos = parseFen(opts.fen, opts.variant);
    if (this.selected >= 0 && !this.canPick(this.selected)) this.selected = -1;
    if (turned) this.yaw = 0;
    this.dressBoard();
    this.draw();
  }

  canPick(sq) {
    return !!(this.opts && this.opts.movable && this.legalFrom(sq).length);
  }

  /** The board look (and the side the coordinates are read from) as the board's texture. */
  dressBoard() {
    const root = document.documentElement;
    const look = root.dataset.theme || 'green';
    const style = getComputedStyle(root);
    const light = style.getPropertyValue('--light').trim() || '#eeeed2';
    const dark = style.getPropertyValue('--dark').trim() || '#769656';
    const key = `${look}|${light}|${dark}|${this.opts.orientation}`;
    if (key === this.lookKey) return;
    this.lookKey = key;
    this.look = look;
    const frame = new THREE.Color(dark).lerp(new THREE.Color(0x1b130c), 0.55);
    this.slabMaterial.color.copy(frame);
    const c = document.createElement('canvas');
    c.width = c.height = 1024;
    const g = c.getContext('2d');
    // At once: the plain colours; then the look's own drawing, once the browser has drawn it.
    const paint = (image) => {
      g.fillStyle = `#${frame.getHexString()}`;
      g.fillRect(0, 0, 1024, 1024);
      const u = 1024 / 9;
      if (image) g.drawImage(image, u / 2, u / 2, u * 8, u * 8);
      else {
        for (let sq = 0; sq < 64; sq++) {
          g.fillStyle = (fileOf(sq) + rankOf(sq)) % 2 ? light : dark;
          g.fillRect(u / 2 + fileOf(sq) * u, u / 2 + (7 - rankOf(sq)) * u, u, u);
        }
      }
      // The coordinates on the frame, upright for the side the board is seen from.
      g.fillStyle = 'rgba(255,255,255,.85)';
      g.font = `bold ${Math.round(u * 0.32)}px system-ui, sans-serif`;
      g.textAlign = 'center';
      g.textBaseline = 'middle';
      const black = this.opts.orientation === 'black';
      for (let i = 0; i < 8; i++) {
        const x = u / 2 + i * u + u / 2;
        const y = u / 2 + (7 - i) * u + u / 2;
        for (const [cx, cy, text, edge] of [[x, 1024 - u / 4, 'abcdefgh'[i], !black], [x, u / 4, 'abcdefgh'[i], black], [u / 4, y, String(i + 1), !black], [1024 - u / 4, y, String(i + 1), black]]) {
          if (!edge) continue;
          g.save();
          g.translate(cx, cy);
          if (black) g.rotate(Math.PI);
          g.fillText(text, 0, 0);
          g.restore();
        }
      }
      const tex = new THREE.CanvasTexture(c);
      tex.colorSpace = THREE.SRGBColorSpace;
      if (this.topMaterial.map) this.topMaterial.map.dispose();
      this.topMaterial.map = tex;
      this.topMaterial.needsUpdate = true;
    };
    paint(null);
    this.lookReady = null;
    this.pendingLook = null;
    const img = new Image();
    img.onload = () => {
      if (this.lookKey !== key) return;
      paint(img);
      this.pendingLook = look;
      this.requestRender();
    };
    img.onerror = () => {
      if (this.lookKey !== key) return;
      this.pendingLook = look;
      this.requestRender();
    };
    img.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(boardLookSvg(look, light, dark))}`;
  }

  /** The marks and pieces of the current options. */
  draw() {
    const o = this.opts;
    const pos = this.pos;
    const still = reducedMotion();
    // What this draw made for itself (the marks' buffers, a blast's fading material) goes
    // with it; the shared geometries and materials stay.
    for (const group of [this.marks, this.effects]) {
      for (const o of group.children) {
        if (!o.userData.own) continue;
        if (o.userData.own.geometry) o.geometry.dispose();
        if (o.userData.own.material) o.material.dispose();
        if (o.isInstancedMesh) o.dispose();
      }
    }
    this.marks.clear();
    this.pieces.clear();
    this.effects.clear();
    const put = (geometry, material, sq, y = 0.003) => {
      const m = new THREE.Mesh(geometry, material);
      m.position.copy(at(sq, y));
      m.renderOrder = 1;
      this.marks.add(m);
      return m;
    };
    const checkSq = o.check ? pos.board.findIndex((p) => p && p.role === 'k' && p.color === pos.turn) : -1;
    for (const sq of o.last || []) put(SQUARE, MARKS.last, sq);
    for (const sq of o.premove || []) put(SQUARE, MARKS.premove, sq, 0.004);
    if (this.selected >= 0) put(SQUARE, MARKS.selected, this.selected, 0.005);
    if (checkSq >= 0) put(SQUARE, MARKS.check, checkSq, 0.006);
    const dests = this.selected >= 0 ? this.legalFrom(this.selected) : [];
    for (const sq of dests) put(pos.board[sq] ? RING : DOT, MARKS.dest, sq, 0.007);
    const set = pieceSet();
    const geo = geometries((SETS[set] || SETS.frontier).segments);
    const mats = materials(set);
    const elapsed = o.anim ? Date.now() - o.anim.at : Infinity;
    this.anim = null;
    const anim = { slide: null, capture: null, reveal: null, booms: [] };
    this.shown = {};
    const hidden = [];
    for (let sq = 0; sq < 64; sq++) {
      let p = pos.board[sq];
      if (!p) continue;
      const unveiled = p.hidden && o.unveil && o.unveil[sq] && o.unveil[sq].color === p.color;
      if (unveiled) p = { color: p.color, role: o.unveil[sq].role, hidden: false };
      const piece = new THREE.Group();
      for (const g of geo[p.role]) piece.add(new THREE.Mesh(g, mats[p.color]));
      // The knight looks to its left, as seen by its own player.
      if (p.role === 'n') piece.rotation.y = p.color === 'w' ? 0 : Math.PI;
      if (p.hidden) {
        piece.userData.mark = hidden.length;
        hidden.push(at(sq, HEIGHT[p.role] + 0.28));
      }
      if (unveiled) put(FOOT_RING, MARKS.unveil, sq, 0.008);
      piece.position.copy(at(sq));
      piece.userData.sq = sq;
      this.pieces.add(piece);
      this.shown[squareName(sq)] = { piece: p.color + p.role, hidden: !!p.hidden, unveiled: !!unveiled };
      if (this.drag && this.drag.moved && this.drag.from === sq) this.drag.mesh = piece;
      if (!still && o.anim && o.anim.slide && o.anim.slide[1] === sq && elapsed < SLIDE_MS) anim.slide = { piece, from: at(o.anim.slide[0]), to: at(sq) };
      if (!still && o.revealed === sq && elapsed < SLIDE_MS + 600) anim.reveal = { piece, sq };
    }
    // The hidden pieces' marks and the rings at their feet: one draw call each.
    this.markPoints = null;
    if (hidden.length) {
      this.markPoints = hiddenMarks(hidden);
      this.markPoints.userData.own = { geometry: true };
      this.marks.add(this.markPoints);
      const rings = new THREE.InstancedMesh(FOOT_RING, MARKS.hidden, hidden.length);
      rings.userData.own = {};
      const m = new THREE.Matrix4();
      hidden.forEach((v, i) => rings.setMatrixAt(i, m.makeTranslation(v.x, 0.008, v.z)));
      rings.renderOrder = 1;
      this.marks.add(rings);
    }
    if (o.anim && o.anim.captured && o.anim.slide && elapsed < 500) {
      // The piece taken sinks away: a hidden one as it looked, or as it was where this seat
      // took it and was told (the capture's private identity).
      const known = o.anim.capturedIdentity;
      const p = known ? { ...o.anim.captured, role: known, hidden: false } : o.anim.captured;
      const piece = new THREE.Group();
      for (const g of geo[p.role]) piece.add(new THREE.Mesh(g, mats[p.color]));
      if (p.hidden) {
        const m = hiddenMark();
        m.position.y = HEIGHT[p.role] + 0.28;
        piece.add(m);
      }
      piece.position.copy(at(o.anim.slide[1]));
      if (!still) {
        this.effects.add(piece);
        anim.capture = { piece };
      }
      this.logOnce('captures', o.anim, { square: squareName(o.anim.slide[1]), piece: p.color + p.role, hidden: !!p.hidden, identified: !!known });
    }
    if (o.revealed >= 0) this.logOnce('reveals', o.anim, squareName(o.revealed));
    if (o.revealed >= 0 && o.revealed !== undefined) put(RING, MARKS.unveil, o.revealed, 0.009).name = 'reveal-flash';
    for (const sq of o.exploded || []) {
      this.logOnce('booms', o.anim, squareName(sq));
      // The blast's still mark (under reduced motion, all there is).
      const scorch = put(FOOT_RING, MARKS.scorch, sq, 0.01);
      scorch.scale.setScalar(1.1);
      if (!still && elapsed < 900) anim.booms.push(this.blast(sq));
    }
    for (const kind of ['slide', 'capture', 'reveal']) if (anim[kind]) this.seenAnims.add(kind);
    if (anim.booms.length) this.seenAnims.add('explode');
    if (anim.slide || anim.capture || anim.reveal || anim.booms.length) this.anim = { ...anim, at: o.anim ? o.anim.at : Date.now() };
    this.step();
    this.render();
  }

  /** Notes what a move showed, once per move (`anim`: the move's effects), for the tests. */
  logOnce(kind, anim, entry) {
    const key = `${kind}|${anim ? anim.at : ''}|${JSON.stringify(entry)}`;
    if (this.logged.has(key)) return;
    if (this.logged.size > 1000) this.logged.clear();
    this.logged.add(key);
    this.log[kind].push(entry);
    if (this.log[kind].length > 100) this.log[kind].shift();
  }

  /** An explosion on `sq`: a fireball and debris flying out (animated by `step`). */
  blast(sq) {
    const centre = at(sq, 0.3);
    const ball = new THREE.Mesh(FIREBALL, new THREE.MeshBasicMaterial({ color: 0xff7a1a, transparent: true, opacity: 0.9, depthWrite: false }));
    ball.userData.own = { material: true };
    ball.position.copy(centre);
    this.effects.add(ball);
    const debris = [];
    for (let i = 0; i < 8; i++) {
      const d = new THREE.Mesh(DEBRIS, i % 2 ? DEBRIS_DARK : DEBRIS_BRIGHT);
      const a = (i / 8) * Math.PI * 2;
      d.userData.v = new THREE.Vector3(Math.cos(a) * 1.6, 2.2 + (i % 3) * 0.4, Math.sin(a) * 1.6);
      d.position.copy(centre);
      this.effects.add(d);
      debris.push(d);
    }
    return { ball, debris, centre };
  }

  /** Advances the animations to now; asks for the next frame while any goes on. */
  step() {
    const a = this.anim;
    if (!a) return;
    const elapsed = Date.now() - a.at;
    let going = false;
    if (a.slide) {
      const k = ease(elapsed / SLIDE_MS);
      a.slide.piece.position.lerpVectors(a.slide.from, a.slide.to, k);
      a.slide.piece.position.y = Math.sin(Math.PI * k) * 0.35;
      going ||= k < 1;
    }
    if (a.capture) {
      const k = Math.min(1, elapsed / 500);
      a.capture.piece.scale.setScalar(Math.max(0.001, 1 - k));
      a.capture.piece.position.y = -0.3 * k;
      going ||= k < 1;
    }
    if (a.reveal) {
      // The piece turns round once it has arrived.
      const k = ease((elapsed - SLIDE_MS) / 600);
      a.reveal.piece.rotation.y = (a.reveal.piece.userData.baseYaw ??= a.reveal.piece.rotation.y) + k * Math.PI * 2;
      going ||= k < 1;
    }
    for (const b of a.booms) {
      const k = Math.min(1, elapsed / 800);
      const s = 0.3 + 1.3 * ease(k);
      b.ball.scale.setScalar(s);
      b.ball.material.opacity = 0.9 * (1 - k);
      const tt = (elapsed / 1000) * 0.8;
      for (const d of b.debris) {
        d.position.set(b.centre.x + d.userData.v.x * tt, Math.max(0.04, b.centre.y + d.userData.v.y * tt - 4.9 * tt * tt), b.centre.z + d.userData.v.z * tt);
        d.rotation.x += 0.3;
      }
      going ||= k < 1;
    }
    if (going) this.requestRender();
    else this.anim = null;
  }

  requestRender() {
    if (this.frameRequested) return;
    this.frameRequested = true;
    requestAnimationFrame(() => {
      this.frameRequested = false;
      this.step();
      this.render();
    });
  }

  placeCamera() {
    const base = this.opts && this.opts.orientation === 'black' ? Math.PI : 0;
    const yaw = base + this.yaw;
    const r = this.distance;
    this.camera.position.set(r * Math.sin(this.pitch) * Math.sin(yaw), r * Math.cos(this.pitch), r * Math.sin(this.pitch) * Math.cos(yaw));
    this.camera.lookAt(0.3 * Math.sin(yaw), -0.3, 0.3 * Math.cos(yaw));
  }

  render() {
    if (!this.el) return;
    const t0 = performance.now();
    // While the player turns the board it is drawn at half resolution (a quarter of the
    // pixels: software WebGL keeps up), and sharp again once it stands still.
    const scale = this.turning ? 0.5 : 1;
    if (this.size && scale !== this.scale) {
      this.scale = scale;
      this.renderer.setSize(Math.round(this.size[0] * scale), Math.round(this.size[1] * scale), false);
    }
    this.placeCamera();
    this.renderer.render(this.scene, this.camera);
    // The look counts as drawn once a frame with its texture is.
    if (this.pendingLook) {
      this.lookReady = this.pendingLook;
      this.pendingLook = null;
    }
    this.stats.renders += 1;
    this.stats.renderMs.push(performance.now() - t0);
    this.stats.renderAt.push(t0);
    if (this.stats.renderMs.length > 500) {
      this.stats.renderMs.shift();
      this.stats.renderAt.shift();
    }
    // The tests read the drawn frame back here (the drawing buffer is only whole until then).
    if (this.afterRender) this.afterRender();
  }

  // ---------------------------------------------------------------- input

  /** The square under client point (x, y): a piece's square if a piece is hit, else the board's. */
  squareAt(x, y) {
    const r = this.canvas.getBoundingClientRect();
    if (!r.width || x < r.left || y < r.top || x > r.right || y > r.bottom) return -1;
    const ndc = new THREE.Vector2(((x - r.left) / r.width) * 2 - 1, -((y - r.top) / r.height) * 2 + 1);
    this.placeCamera();
    this.camera.updateMatrixWorld();
    this.raycaster.setFromCamera(ndc, this.camera);
    for (const hit of this.raycaster.intersectObjects(this.pieces.children, true)) {
      if (hit.object instanceof THREE.Sprite) continue;
      let o = hit.object;
      while (o && o.userData.sq === undefined) o = o.parent;
      // A dragged piece is under the pointer: what counts is what lies beneath it.
      if (o && !(this.drag && this.drag.moved && o === this.drag.mesh)) return o.userData.sq;
    }
    const p = new THREE.Vector3();
    if (!this.raycaster.ray.intersectPlane(this.plane, p)) return -1;
    const f = Math.floor(p.x + 4);
    const rank = Math.floor(4 - p.z);
    return f < 0 || f > 7 || rank < 0 || rank > 7 ? -1 : rank * 8 + f;
  }

  /** The board's plane under client point (x, y) (a dragged piece follows it). */
  planeAt(x, y) {
    const r = this.canvas.getBoundingClientRect();
    const ndc = new THREE.Vector2(((x - r.left) / r.width) * 2 - 1, -((y - r.top) / r.height) * 2 + 1);
    this.raycaster.setFromCamera(ndc, this.camera);
    const p = new THREE.Vector3();
    return this.raycaster.ray.intersectPlane(this.plane, p) ? p : null;
  }

  /**
   * A point in client coordinates where a click lands on `name` (the square's centre, or
   * its piece; else another point of the square that nothing stands in front of), or null.
   * For the tests, which click the 3D board as a player would.
   */
  clientPointOf(name) {
    const sq = parseSquare(name);
    if (sq < 0 || !this.el) return null;
    const r = this.canvas.getBoundingClientRect();
    this.placeCamera();
    this.camera.updateMatrixWorld();
    const c = at(sq);
    const tries = [];
    for (const y of this.pos.board[sq] ? [0.3, 0.15, 0.5] : [0]) for (const [dx, dz] of [[0, 0], [0, -0.3], [0.25, -0.3], [-0.25, -0.3], [0.3, 0], [-0.3, 0], [0, 0.3]]) tries.push(new THREE.Vector3(c.x + dx, y, c.z + dz));
    for (const p of tries) {
      const v = p.clone().project(this.camera);
      const x = r.left + ((v.x + 1) / 2) * r.width;
      const y = r.top + ((1 - v.y) / 2) * r.height;
      if (this.squareAt(x, y) === sq) return { x, y };
    }
    return null;
  }

  /** What the scene shows, for the tests: pieces by square, marks, animations and blasts seen. */
  sceneState() {
    return {
      pieces: this.shown || {},
      last: (this.opts?.last || []).map(squareName),
      revealed: this.opts && this.opts.revealed >= 0 ? squareName(this.opts.revealed) : null,
      exploded: (this.opts?.exploded || []).map(squareName),
      booms: this.log.booms.slice(),
      captures: this.log.captures.slice(),
      reveals: this.log.reveals.slice(),
      anims: [...this.seenAnims].sort(),
      look: this.lookReady,
      orientation: this.opts?.orientation,
      renders: this.stats.renders,
      // A move's animation still running (a piece may be on its way across the board).
      animating: !!this.anim,
      // What WebGL holds: geometries and textures not yet disposed.
      memory: { ...this.renderer.info.memory },
    };
  }

  bindInput() {
    const c = this.canvas;
    c.addEventListener('pointerdown', (e) => {
      if (!this.opts || e.button > 0) return;
      const sq = this.squareAt(e.clientX, e.clientY);
      this.press = { x: e.clientX, y: e.clientY, sq, moved: false, yaw: this.yaw, pitch: this.pitch };
      if (sq >= 0 && this.canPick(sq)) this.drag = { from: sq, moved: false };
      c.setPointerCapture && c.setPointerCapture(e.pointerId);
    });
    c.addEventListener('pointermove', (e) => {
      const p = this.press;
      if (!p) return;
      const dx = e.clientX - p.x;
      const dy = e.clientY - p.y;
      if (!p.moved && Math.hypot(dx, dy) < 6) return;
      p.moved = true;
      if (this.drag) {
        if (!this.drag.moved) {
          this.drag.moved = true;
          this.selected = this.drag.from;
          this.draw();
        }
        const point = this.planeAt(e.clientX, e.clientY);
        const mesh = this.drag.mesh;
        if (point && mesh) {
          mesh.position.set(point.x, 0.35, point.z);
          // A hidden piece's mark goes with it.
          if (mesh.userData.mark !== undefined && this.markPoints) {
            const pos = this.markPoints.geometry.attributes.position;
            pos.setX(mesh.userData.mark, point.x);
            pos.setZ(mesh.userData.mark, point.z);
            pos.needsUpdate = true;
          }
        }
        this.requestRender();
        return;
      }
      // Orbit: round the board, and between nearly overhead and low over it.
      this.turning = true;
      this.yaw = Math.max(-Math.PI, Math.min(Math.PI, p.yaw - dx * 0.008));
      this.pitch = Math.max(0.12, Math.min(1.2, p.pitch - dy * 0.006));
      this.requestRender();
    });
    const up = (e) => {
      const p = this.press;
      const sq = p ? this.squareAt(e.clientX, e.clientY) : -1;
      const drag = this.drag;
      this.press = null;
      this.drag = null;
      if (this.turning) {
        this.turning = false;
        this.requestRender();
      }
      if (this.afterDrag) {
        const redraw = this.afterDrag;
        this.afterDrag = null;
        setTimeout(redraw, 0);
      }
      if (!p) return;
      if (drag && drag.moved) {
        this.selected = -1;
        if (sq >= 0 && sq !== drag.from) this.tryMove(drag.from, sq, true);
        else this.draw();
        return;
      }
      if (!p.moved && sq >= 0) this.clickSquare(sq);
    };
    c.addEventListener('pointerup', up);
    c.addEventListener('pointercancel', () => {
      this.press = null;
      this.drag = null;
      this.turning = false;
      if (this.afterDrag) {
        const redraw = this.afterDrag;
        this.afterDrag = null;
        setTimeout(redraw, 0);
      } else if (this.opts) this.draw();
    });
    c.addEventListener('wheel', (e) => {
      e.preventDefault();
      this.distance = Math.max(9, Math.min(24, this.distance * (1 + Math.sign(e.deltaY) * 0.08)));
      this.requestRender();
    }, { passive: false });
    c.addEventListener('contextmenu', (e) => {
      e.preventDefault();
      this.selected = -1;
      this.drag = null;
      if (!(this.onCancel && this.onCancel()) && this.opts) this.draw();
    });
  }

  /** The camera as the player left it, and to zoom: `{yaw, pitch, distance}` (all clamped). */
  setCamera({ yaw = this.yaw, pitch = this.pitch, distance = this.distance } = {}) {
    this.yaw = Math.max(-Math.PI, Math.min(Math.PI, yaw));
    this.pitch = Math.max(0.12, Math.min(1.2, pitch));
    this.distance = Math.max(9, Math.min(24, distance));
    this.requestRender();
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
  }

  tryMove(from, to, dragged = false) {
    this.draw();
    this.onMove(from, to, dragged);
  }
}
