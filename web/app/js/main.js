// The Frontier web client: entry, lobby, games (play and watch), dashboard, leaderboard.
// Plain JavaScript modules; every visible string goes through `t` (i18n.js).

import { api, ApiError, Connection } from './net.js';
import { t, setLang, lang, LANGS, roleName, detectLang } from './i18n.js';
import { parseFen, legalMoves, squareName, parseSquare, uci as uciOf, san, findMove, ROLE_LETTER, rankOf, play, inCheck, toFen } from './chess.js';
import { fromFrame, applyEvent, moveList, unaccounted, startPosition, positionAt } from './game.js';
import { BoardView, BOARD_LOOKS } from './board.js';
import { pieceIcon, pieceSvg, PIECE_SETS, setPieceSet } from './pieces.js';
import { verifyShuffle } from './sha256.js';
import { playSound, muted, setMuted, played } from './sound.js';

// The lobby forms' choices (quick match, the computer, a private board): the lobby is drawn
// again whenever something changes (a reconnect's `status`, a board, a game), and a choice
// made before that must stay (a player who picked atomic must not start a standard game).
const seekChoice = { variant: 'standard', pool: '5+0', rated: false };
const computerChoice = { variant: 'standard', level: 'easy', color: 'white', clock: 'none' };
const createChoice = { variant: 'hidden', color: 'white', minutes: 0, increment: 0, rated: false };

const $ = (sel, root = document) => root.querySelector(sel);
const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const store = {
  get: (k, d = null) => {
    try {
      const v = localStorage.getItem('frontier.' + k);
      return v === null ? d : JSON.parse(v);
    } catch {
      return d;
    }
  },
  set: (k, v) => localStorage.setItem('frontier.' + k, JSON.stringify(v)),
  del: (k) => localStorage.removeItem('frontier.' + k),
};

const VARIANTS = ['standard', 'hidden', 'atomic'];
const POOLS = ['1+0', '3+0', '3+2', '5+0', '10+0', '15+10', '30+0'];

const app = {
  token: null,
  player: null,
  conn: null,
  // 'idle' until a connection is first tried (signed in): nothing to report before then;
  // then 'connecting' | 'online' | 'offline' (lost: reconnecting).
  status: 'idle',
  // The opponent's absence a claim of victory needs (the server's default, docs/protocol.md:
  // the server is never told to the client); a test may lower it.
  claimAfterMs: 300000,
  // Game id → when this client last saw a sign of the opponent (its move, or the game's
  // start or first sight here): a claim cannot succeed before that plus claimAfterMs.
  opponentSeen: new Map(),
  // A seek sent and not answered yet: "find an opponent" is not clickable meanwhile.
  seekSending: false,
  games: new Map(),
  // Finished game id → the latest `rematch_offered` / `rematch_cancelled` frame about it.
  rematches: new Map(),
  // Game id → {code, invite} of boards this client created and that still wait.
  boards: new Map(),
  clockOffset: null,
  view: null,
  board: null,
  notice: null,
  effects: { exploded: [], revealed: -1, until: 0 },
  // Game id → how this client looks at it: {flipped, ply (null: the live position), seen
  // (the plies there were when the player stepped back)}.
  views: new Map(),
  // Game id → {from, to}: the one move queued during the opponent's turn.
  premoves: new Map(),
  // Games whose low-time warning sounded.
  lowWarned: new Set(),
  // A move this client made by dragging (uci): it is not slid again when it arrives.
  dragged: null,
  // The sounds played (sound.js).
  sounds: played,
  seek: null,
  // Every frame received, for the tests' check that the client shows nothing it was not sent.
  frames: [],
  // A move's time on screen (ms, performance.now()): from the server's event frame reaching
  // the frame handler to the first animation frame after the board was drawn for it (the
  // last 500 moves of the game on screen; read by the browser test's measure).
  perf: { moveDrawn: [] },
  // The 3D board: its module once imported, the one board (one WebGL context) once made,
  // and whether this browser failed to draw it.
  three: { module: null, loading: null, board: null, failed: false },
  // The account's preferences: times read and applied, writes answered, writes in flight.
  prefs: { loaded: 0, saved: 0, pending: 0, chain: Promise.resolve() },
  // The lobby forms' recorded choices (what their submits send), and how many times the
  // screen was drawn: for a test to tell a choice never recorded from one drawn wrongly.
  choices: { seek: seekChoice, computer: computerChoice, create: createChoice },
  renders: 0,
};
window.frontier = app;

// ---------------------------------------------------------------- session

function tokenValid(token) {
  try {
    const payload = JSON.parse(atob(token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')));
    return payload.exp * 1000 > Date.now() + 60000;
  } catch {
    return false;
  }
}

/**
 * Whether the token carries the moderator claim: read from its payload for display only
 * (the Moderation link and screens); the server checks the role on every call.
 */
function isModerator(token = app.token) {
  try {
    const payload = JSON.parse(atob(token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')));
    return payload.moderator === true;
  } catch {
    return false;
  }
}

function signIn({ token, player }) {
  app.token = token;
  app.player = player;
  store.set('token', token);
  store.set('player', player);
  connect();
  loadPreferences();
}

// ---------------------------------------------------------------- preferences

// A registered player's board look, piece set, 2D/3D and mute are kept in the account
// (GET/PUT /api/me/preferences, docs/protocol.md) as well as in this browser: read after
// logging in, written on every change. A guest's stay in the browser only.
const registered = () => !!(app.token && app.player && !app.player.guest);

function currentPreferences() {
  return { board: store.get('theme', 'green'), pieces: store.get('pieces', 'frontier'), view: store.get('view3d', false) ? '3d' : '2d', muted: muted() };
}

async function loadPreferences() {
  if (!registered()) return;
  const token = app.token;
  let prefs;
  try {
    prefs = await api('/api/me/preferences', { token });
  } catch {
    return; // the browser's own stand
  }
  if (app.token !== token || !prefs || typeof prefs !== 'object') return;
  if (!Object.keys(prefs).length) {
    // Nothing kept yet: the account takes what this browser has.
    savePreferences();
    return;
  }
  if (BOARD_LOOKS.includes(prefs.board)) store.set('theme', prefs.board);
  if (PIECE_SETS.includes(prefs.pieces)) store.set('pieces', prefs.pieces);
  if (prefs.view === '2d' || prefs.view === '3d') store.set('view3d', prefs.view === '3d');
  if (typeof prefs.muted === 'boolean') setMuted(prefs.muted);
  app.prefs.loaded += 1;
  applyLooks();
  if ($('#main.game-screen')) renderGame();
  else render();
}

/** Writes the preferences, one write at a time (each sends them as they are when it goes). */
function savePreferences() {
  if (!registered()) return;
  const token = app.token;
  app.prefs.pending += 1;
  app.prefs.chain = app.prefs.chain
    .then(() => api('/api/me/preferences', { method: 'PUT', body: currentPreferences(), token }))
    .then(() => (app.prefs.saved += 1))
    .catch(() => {}) // kept in this browser meanwhile
    .finally(() => (app.prefs.pending -= 1));
}

function signOut() {
  if (app.conn) app.conn.stop();
  app.conn = null;
  app.status = 'idle';
  app.token = null;
  app.player = null;
  app.games.clear();
  store.del('token');
  store.del('player');
  store.del('boards');
  app.boards.clear();
  location.hash = '#/';
  render();
}

function connect() {
  if (app.conn) app.conn.stop();
  app.conn = new Connection({
    token: app.token,
    onFrame: onFrame,
    onStatus: (status, code) => {
      app.status = status;
      if (status === 'auth-failed') {
        // The token was refused (expired, or signed elsewhere): enter again.
        app.conn = null;
        store.del('token');
        app.token = null;
        app.flash = t('sessionExpired');
        void code;
        render();
        return;
      }
      renderStatus();
    },
    onReady: () => {
      // Resume every game on screen or still being played, from the last version seen.
      for (const [id, g] of app.games) {
        if (g.status !== 'finished' || currentGameId() === id) {
          app.conn.post({ type: 'open', id: app.conn.nextId('o'), game_id: id, after_version: g.version });
        }
      }
      const id = currentGameId();
      if (id && !app.games.has(id)) openGame(id);
      // Where quick match stands: a seek still standing, or a match made while away.
      app.conn.post({ type: 'status', id: app.conn.nextId('st') });
      if (app.pendingJoin) {
        const code = app.pendingJoin;
        app.pendingJoin = null;
        joinBoard(code);
      }
    },
  });
}

/** The boards this client created that still wait, kept across reloads (their codes). */
function saveBoards() {
  store.set('boards', [...app.boards.entries()]);
}

function currentGameId() {
  const m = location.hash.match(/^#\/game\/([\w-]+)/);
  return m ? m[1] : null;
}

function openGame(id) {
  app.conn.send({ type: 'open', game_id: id }).then((f) => {
    if (f.type === 'error') setNotice(errorText(f));
  });
}

// ---------------------------------------------------------------- frames

function noteClock(clocks, receivedAt) {
  if (!clocks) return;
  // The offset between this clock and the server's: the smallest (receipt − reading time)
  // seen, which is the offset plus the quickest delivery.
  const sample = receivedAt - clocks.at;
  app.clockOffset = app.clockOffset === null ? sample : Math.min(app.clockOffset, sample);
}

function onFrame(frame) {
  const received = performance.now();
  const now = Date.now();
  app.frames.push(frame);
  switch (frame.type) {
    case 'game': {
      const g = fromFrame(frame, now);
      noteClock(g.clocks, now);
      if (g.status !== 'waiting' && app.boards.delete(frame.game_id)) saveBoards();
      app.games.set(frame.game_id, g);
      tryPremove(g);
      if (currentGameId() === frame.game_id) renderGame();
      break;
    }
    case 'event': {
      const g = app.games.get(frame.game_id);
      if (!g) return;
      const before = g.fen;
      const r = applyEvent(g, frame, now);
      if (r === 'gap') {
        app.conn.post({ type: 'open', id: app.conn.nextId('o'), game_id: frame.game_id });
        return;
      }
      if (r !== 'applied') return;
      noteClock(frame.clocks, now);
      const e = frame.event;
      const onScreen = currentGameId() === frame.game_id;
      // A sign of the opponent (its move, or the game starting): a claim counts from here.
      if (e.kind === 'started' || (e.kind === 'move' && e.color && e.color !== g.seat)) app.opponentSeen.set(frame.game_id, now);
      if (e.kind === 'move') {
        const atomicCapture = g.variant === 'atomic' && !!e.captured;
        const from = parseSquare(e.uci.slice(0, 2));
        const to = parseSquare(e.uci.slice(2, 4));
        // The piece a capture took, as it was drawn (a hidden one as it looked).
        const taken = e.captured && !atomicCapture ? parseFen(before, g.variant).board[parseSquare(e.captured.square)] : null;
        app.effects = {
          at: now,
          slide: app.dragged === e.uci.slice(0, 4) ? null : [from, to],
          captured: taken,
          // A hidden piece this seat took: what it was (sent to the capturer only).
          capturedIdentity: e.captured_identity ? ROLE_LETTER[e.captured_identity] : null,
          // Atomic: the capture square, the capturer's origin and every square emptied.
          exploded: g.variant === 'atomic' && e.captured ? [...new Set([e.uci.slice(0, 2), e.uci.slice(2, 4), ...(e.exploded || [])])] : [],
          revealed: e.reveal ? parseSquare(e.reveal.square) : -1,
          until: now + 1200,
          game: frame.game_id,
        };
        app.dragged = null;
        if (app.effects.exploded.length || app.effects.revealed >= 0) {
          setTimeout(() => currentGameId() === frame.game_id && renderGame(), 1250);
        }
        if (onScreen) {
          playSound(atomicCapture ? 'explosion' : e.captured ? 'capture' : 'move');
          if (e.reveal) playSound('reveal');
          if (e.check) playSound('check');
        }
      }
      if (onScreen && e.kind === 'started') playSound('start');
      if (onScreen && frame.outcome) playSound('end');
      if (g.status !== 'playing') app.premoves.delete(g.id);
      tryPremove(g);
      if ((e.kind === 'started' || frame.outcome) && app.boards.has(frame.game_id)) {
        app.boards.delete(frame.game_id);
        saveBoards();
      }
      if (currentGameId() === frame.game_id) {
        renderGame();
        if (e.kind === 'move') {
          requestAnimationFrame(() => {
            const samples = app.perf.moveDrawn;
            samples.push(performance.now() - received);
            if (samples.length > 500) samples.shift();
          });
        }
      }
      break;
    }
    case 'error':
      if (frame.game_id) {
        setNotice(errorText(frame));
        // Recover from the server's own state: a whole view of the game.
        if (app.games.has(frame.game_id)) app.conn.post({ type: 'open', id: app.conn.nextId('o'), game_id: frame.game_id });
      }
      break;
    case 'matched':
      // On every connection of the player; the game frame follows.
      app.seek = null;
      if (frame.opponent?.bot) setNotice(t('matchedBot', { name: frame.opponent.name }));
      location.hash = `#/game/${frame.game_id}`;
      break;
    case 'game_created':
      if (frame.game_id) location.hash = `#/game/${frame.game_id}`;
      break;
    case 'rematch_offered':
    case 'rematch_cancelled':
      // The state of a finished game's rematch offer (answers and notices alike).
      app.rematches.set(frame.game_id, frame);
      if (currentGameId() === frame.game_id) renderGame();
      break;
    case 'rematch_started':
      app.rematches.delete(frame.game_id);
      if (currentGameId() === frame.game_id) location.hash = `#/game/${frame.new_game_id}`;
      break;
    case 'seeking':
      // A replacing seek keeps no wait: the server counts from the new one.
      app.seek = {
        pools: frame.pools,
        estimatedWaitMs: frame.estimated_wait_ms ?? null,
        since: frame.replaced || !app.seek ? now : app.seek.since,
      };
      if (!currentGameId()) render();
      break;
    case 'seek_cancelled':
      app.seek = null;
      if (!currentGameId()) render();
      break;
    case 'status': {
      // After a (re)connect: the seek still standing (its wait as the server counts it),
      // and a match made while this client was away, if it was seeking then.
      const wasSeeking = !!app.seek;
      // A seek sent before the connection dropped got no answer: the server's word is this.
      app.seekSending = false;
      app.seek = frame.seeking
        ? { pools: frame.seeking.pools, estimatedWaitMs: app.seek?.estimatedWaitMs ?? null, since: Math.min(now, frame.seeking.since + (app.clockOffset ?? 0)) }
        : null;
      if (!frame.seeking && wasSeeking && frame.matched && !app.games.has(frame.matched.game_id)) {
        location.hash = `#/game/${frame.matched.game_id}`;
      } else if (!currentGameId()) render();
      break;
    }
    default:
      break;
  }
}

function errorText(frame) {
  const key = 'err_' + frame.code;
  const text = t(key);
  return text === key ? t('refused', { code: frame.code }) : text;
}

function setNotice(text) {
  app.notice = { text, at: Date.now() };
  const el = $('#notice');
  if (el) {
    el.textContent = text;
    el.hidden = false;
  }
}

// ---------------------------------------------------------------- layout

function header() {
  const who = app.player
    ? `<span class="who">${esc(app.player.name)}${app.player.guest ? ` <small>(${t('guest')})</small>` : ''}</span>
       <a href="#/player/${app.player.id}" data-nav="dashboard">${t('dashboard')}</a>
       <button type="button" class="link" id="signout">${t('signOut')}</button>`
    : '';
  return `<header class="top">
    <a class="brand" href="#/">Frontier</a>
    <nav>
      ${app.player ? `<a href="#/">${t('play')}</a>` : ''}
      <a href="#/leaderboard">${t('leaderboard')}</a>
      ${app.token && isModerator() ? `<a href="#/moderation">${t('moderation')}</a>` : ''}
      ${who}
    </nav>
    <div class="prefs">
      <label><span class="sr">${t('language')}</span>
        <select id="lang" aria-label="${t('language')}">${LANGS.map(([code, name]) => `<option value="${code}" ${code === lang() ? 'selected' : ''}>${name}</option>`).join('')}</select></label>
      <label><span class="sr">${t('boardTheme')}</span>
        <select id="theme" aria-label="${t('boardTheme')}">${BOARD_LOOKS.map((th) => `<option value="${th}" ${th === store.get('theme', 'green') ? 'selected' : ''}>${t('theme_' + th)}</option>`).join('')}</select></label>
      <button type="button" id="dark" aria-pressed="${document.documentElement.classList.contains('dark')}">${t('darkMode')}</button>
      <span id="status" class="status" role="status"></span>
    </div>
  </header>`;
}

/** The header on screen and the markup it was drawn from (`render` keeps it while unchanged). */
const drawnHeader = { el: null, html: '' };

function renderStatus() {
  const el = $('#status');
  if (!el) return;
  // Nothing before a connection was tried (not signed in yet): never "connection lost".
  const text = app.token ? { online: t('online'), connecting: t('connecting'), offline: t('reconnecting') }[app.status] || '' : '';
  el.textContent = text;
  el.className = `status ${app.status}`;
}

function bindHeader() {
  $('#lang').onchange = (e) => {
    setLang(e.target.value);
    store.set('lang', e.target.value);
    render();
  };
  $('#theme').onchange = (e) => chooseLook('theme', e.target.value);
  $('#dark').onclick = () => {
    store.set('dark', !document.documentElement.classList.contains('dark'));
    applyLooks();
    render();
  };
  const so = $('#signout');
  if (so) so.onclick = signOut;
}

function applyLooks() {
  const root = document.documentElement;
  const dark = store.get('dark', window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches);
  root.classList.toggle('dark', !!dark);
  root.dataset.theme = store.get('theme', 'green');
  setPieceSet(store.get('pieces', 'frontier'));
  root.lang = lang();
}

/** A board look or piece set chosen (kept in localStorage): a board on screen is drawn again. */
function chooseLook(key, value) {
  store.set(key, value);
  savePreferences();
  applyLooks();
  const theme = $('#theme');
  if (theme) theme.value = store.get('theme', 'green');
  if ($('#main.game-screen')) renderGame();
  else if ($('#board')) render();
}

function render() {
  app.renders += 1;
  applyLooks();
  document.title = t('title');
  const main = document.body;
  const route = location.hash || '#/';
  let screen;
  if (!app.token) screen = enterScreen();
  else if (route.startsWith('#/game/')) screen = '<main id="main" class="game-screen"></main>';
  else if (route.startsWith('#/player/')) screen = '<main id="main" class="dashboard"></main>';
  else if (route.startsWith('#/record/')) screen = '<main id="main" class="record"></main>';
  else if (route.startsWith('#/leaderboard')) screen = '<main id="main" class="leaderboard"></main>';
  else if (route.startsWith('#/moderation')) screen = '<main id="main" class="moderation"></main>';
  else screen = lobbyScreen();
  // The header is drawn again only when what it shows changed: a redraw of the screen
  // below it (a status frame after connecting, say) must not replace a select the player
  // is choosing from (a choice made on a header being replaced was lost).
  const head = header();
  const top = drawnHeader.el;
  if (top && main.firstElementChild === top && drawnHeader.html === head) {
    while (top.nextSibling) top.nextSibling.remove();
    top.insertAdjacentHTML('afterend', screen);
  } else {
    main.innerHTML = head + screen;
    drawnHeader.el = main.firstElementChild;
    drawnHeader.html = head;
    bindHeader();
  }
  renderStatus();
  app.board = null;
  if (!app.token) bindEnter();
  else if (route.startsWith('#/game/')) renderGame();
  else if (route.startsWith('#/player/')) renderDashboard(route.slice(9));
  else if (route.startsWith('#/record/')) renderRecord(route.slice(9));
  else if (route.startsWith('#/leaderboard')) renderLeaderboard();
  else if (route.startsWith('#/moderation/report/')) renderReport(route.slice(20));
  else if (route.startsWith('#/moderation/log')) renderAuditLog();
  else if (route.startsWith('#/moderation')) renderModerationQueue();
  else bindLobby();
}

// ---------------------------------------------------------------- enter

function enterScreen() {
  return `<main id="main" class="enter">
    <section class="card hero">
      <h1>${t('welcome')}</h1>
      <p>${t('tagline')}</p>
      ${app.flash ? `<p class="notice">${esc(app.flash)}</p>` : ''}
      <button type="button" id="guest" class="primary big">${t('playAsGuest')}</button>
    </section>
    <section class="card">
      <h2>${t('account')}</h2>
      <form id="account">
        <label>${t('username')} <input name="username" autocomplete="username" required></label>
        <label>${t('password')} <input name="password" type="password" autocomplete="current-password" required></label>
        <div class="row">
          <button type="submit" name="login" class="primary">${t('logIn')}</button>
          <button type="submit" name="register">${t('register')}</button>
        </div>
        <p class="error" id="account-error" role="alert"></p>
      </form>
    </section>
  </main>`;
}

function bindEnter() {
  $('#guest').onclick = async () => {
    try {
      signIn(await api('/api/guest', { method: 'POST' }));
      render();
    } catch (e) {
      $('#account-error').textContent = apiErrorText(e);
    }
  };
  const form = $('#account');
  form.onsubmit = async (e) => {
    e.preventDefault();
    const which = e.submitter && e.submitter.name === 'register' ? 'register' : 'login';
    const body = { username: form.username.value.trim(), password: form.password.value };
    try {
      signIn(await api(`/api/${which}`, { method: 'POST', body }));
      render();
    } catch (err) {
      $('#account-error').textContent = apiErrorText(err);
    }
  };
}

function apiErrorText(e) {
  if (!(e instanceof ApiError)) return t('err_internal');
  const key = 'err_' + e.code;
  const text = t(key);
  return text === key ? t('refused', { code: e.code }) : text;
}

// ---------------------------------------------------------------- lobby

function options(values, selected, label) {
  return values.map((v) => `<option value="${v}" ${v === selected ? 'selected' : ''}>${label(v)}</option>`).join('');
}

function lobbyScreen() {
  const waiting = [...app.boards.entries()]
    .map(([id, b]) => `<li>${t('boardCode')}: <code class="code">${esc(b.code)}</code> <a href="#/game/${id}">${t('open')}</a></li>`)
    .join('');
  const live = [...app.games.values()]
    .filter((g) => g.status !== 'finished' && g.seat !== 'spectator')
    .map((g) => `<li><a href="#/game/${g.id}">${t('variant_' + g.variant)} — ${esc(g.white?.name || '?')} ${t('vs')} ${esc(g.black?.name || '?')}</a></li>`)
    .join('');
  const seek = app.seek;
  return `<main id="main" class="lobby">
    <section class="card">
      <h2>${t('quickMatch')}</h2>
      <form id="seek">
        <label>${t('variant')} <select name="variant">${options(VARIANTS, seekChoice.variant, (v) => t('variant_' + v))}</select></label>
        <label>${t('pool')} <select name="pool">${options(POOLS, seekChoice.pool, (p) => p)}</select></label>
        <label class="check"><input name="rated" type="checkbox" ${app.player?.guest ? 'disabled' : seekChoice.rated ? 'checked' : ''}> ${t('rated')}</label>
        <button type="submit" class="primary"${seek || app.seekSending ? ' disabled' : ''}>${t('findOpponent')}</button>
        ${seek ? `<p class="seeking" role="status">${t('searching')} <span id="seek-wait"></span>${seek.estimatedWaitMs != null ? ` (${t('estimatedWait', { s: Math.max(1, Math.round(seek.estimatedWaitMs / 1000)) })})` : ''} — ${t('botOffered')} <button type="button" id="cancel-seek">${t('cancel')}</button></p>` : ''}
        <p class="error" id="seek-error" role="alert"></p>
      </form>
    </section>
    <section class="card">
      <h2>${t('playComputer')}</h2>
      <form id="computer">
        <label>${t('variant')} <select name="variant">${options(VARIANTS, computerChoice.variant, (v) => t('variant_' + v))}</select></label>
        <label>${t('level')} <select name="level">${options(['easy', 'medium', 'hard'], computerChoice.level, (v) => t('level_' + v))}</select></label>
        <label>${t('color')} <select name="color">${options(['white', 'black', 'random'], computerChoice.color, (v) => t('color_' + v))}</select></label>
        <label>${t('clock')} <select name="clock">${options(['none', '5+0', '10+0', '15+10'], computerChoice.clock, (v) => (v === 'none' ? t('noClock') : v))}</select></label>
        <button type="submit" class="primary">${t('start')}</button>
        <p class="error" id="computer-error" role="alert"></p>
      </form>
    </section>
    <section class="card">
      <h2>${t('privateBoard')}</h2>
      <form id="create">
        <label>${t('variant')} <select name="variant">${options(VARIANTS, createChoice.variant, (v) => t('variant_' + v))}</select></label>
        <label>${t('color')} <select name="color">${options(['white', 'black', 'random'], createChoice.color, (v) => t('color_' + v))}</select></label>
        <label>${t('minutes')} <input name="minutes" type="number" min="0" max="60" value="${Number(createChoice.minutes) || 0}" inputmode="numeric"></label>
        <label>${t('increment')} <input name="increment" type="number" min="0" max="60" value="${Number(createChoice.increment) || 0}" inputmode="numeric"></label>
        <label class="check"><input name="rated" type="checkbox" ${app.player?.guest ? 'disabled' : createChoice.rated ? 'checked' : ''}> ${t('rated')}</label>
        <p class="hint-text">${t('minutesHint')}</p>
        <button type="submit" class="primary">${t('createBoard')}</button>
        <p class="error" id="create-error" role="alert"></p>
      </form>
      ${waiting ? `<ul class="waiting">${waiting}</ul>` : ''}
    </section>
    <section class="card">
      <h2>${t('joinBoard')}</h2>
      <form id="join">
        <label>${t('boardCode')} <input name="code" autocomplete="off" required></label>
        <button type="submit" class="primary">${t('join')}</button>
        <p class="error" id="join-error" role="alert"></p>
      </form>
      <h2>${t('watchGame')}</h2>
      <form id="watch">
        <label>${t('gameIdOrLink')} <input name="game" autocomplete="off" required></label>
        <button type="submit">${t('watch')}</button>
      </form>
    </section>
    ${live ? `<section class="card"><h2>${t('yourGames')}</h2><ul>${live}</ul></section>` : ''}
  </main>`;
}

function bindLobby() {
  // Each form sends the recorded choices, not its own fields: the form submitted may have
  // been drawn again after a choice made on the one before it (the lobby redrawn by a
  // `status` while the player picked), and would show the older value.
  const asGuest = () => !!app.player?.guest;
  $('#create').onsubmit = async (e) => {
    e.preventDefault();
    const c = createChoice;
    const minutes = Number(c.minutes) || 0;
    const message = { type: 'create_board', variant: c.variant, color: c.color, rated: !asGuest() && !!c.rated };
    if (minutes > 0) message.clock = { minutes, increment: Number(c.increment) || 0 };
    const answer = await app.conn.send(message);
    if (answer.type === 'board_created') {
      app.boards.set(answer.game_id, { code: answer.code, invite: answer.invite });
      saveBoards();
      location.hash = `#/game/${answer.game_id}`;
    } else $('#create-error').textContent = errorText(answer);
  };
  $('#join').onsubmit = (e) => {
    e.preventDefault();
    joinBoard(e.target.code.value.trim().toUpperCase());
  };
  $('#watch').onsubmit = (e) => {
    e.preventDefault();
    const v = e.target.game.value.trim();
    const m = v.match(/([0-9a-f]{8}-[0-9a-f-]{27,})/i);
    location.hash = `#/game/${m ? m[1] : v}`;
  };
  // Only the field that changed is recorded. Copying every field of the form would let a
  // form drawn before a choice was made (the lobby drawn again by a `status` that came in
  // between) write its stale values over that choice: atomic picked, then the colour
  // picked on the redrawn form, and the game started as standard.
  const remember = (form, choice) => {
    form.oninput = form.onchange = (e) => {
      const field = e.target;
      if (!field || !Object.hasOwn(choice, field.name)) return;
      choice[field.name] = field.type === 'checkbox' ? field.checked : field.value;
    };
  };
  remember($('#seek'), seekChoice);
  remember($('#computer'), computerChoice);
  remember($('#create'), createChoice);
  $('#computer').onsubmit = async (e) => {
    e.preventDefault();
    const c = computerChoice;
    const message = { type: 'play_computer', variant: c.variant, level: c.level, color: c.color };
    if (c.clock !== 'none') {
      const [minutes, increment] = c.clock.split('+').map(Number);
      message.clock = { minutes, increment };
    }
    const answer = await app.conn.send(message);
    if (answer.type === 'game_created') location.hash = `#/game/${answer.game_id}`;
    else $('#computer-error').textContent = errorText(answer);
  };
  $('#seek').onsubmit = async (e) => {
    e.preventDefault();
    // Never a second seek while one stands or is on its way (the button is disabled then).
    if (app.seek || app.seekSending) return;
    const c = seekChoice;
    const [minutes, increment] = c.pool.split('+').map(Number);
    // A pool as docs/protocol.md names it: variant × clock × rated. The `seeking` answer
    // (handled with every frame) shows the wait.
    const pool = { variant: c.variant, clock: { minutes, increment }, rated: !asGuest() && !!c.rated };
    app.seekSending = true;
    e.submitter?.setAttribute('disabled', '');
    let answer;
    try {
      answer = await app.conn.send({ type: 'seek', pools: [pool] });
    } finally {
      app.seekSending = false;
    }
    if (answer.type !== 'error' && !app.seek && !currentGameId()) render();
    if (answer.type === 'error' && !currentGameId()) {
      // `already_matched`: the `matched` notice follows and opens the game.
      if (answer.code !== 'already_matched') app.seek = null;
      render();
      $('#seek-error').textContent = errorText(answer);
    }
  };
  const cancel = $('#cancel-seek');
  if (cancel) {
    cancel.onclick = async () => {
      cancel.disabled = true;
      // `seek_cancelled` clears the seek (with every frame); too late, `matched` follows.
      const answer = await app.conn.send({ type: 'cancel_seek' });
      if (answer.type === 'error' && !currentGameId()) {
        cancel.disabled = false;
        $('#seek-error').textContent = errorText(answer);
      }
    };
  }
}

function joinBoard(code) {
  app.conn.send({ type: 'join_board', code }).then((answer) => {
    if (answer.type === 'board_joined') location.replace(`/#/game/${answer.game_id}`);
    else {
      const el = $('#join-error');
      if (el) el.textContent = errorText(answer);
      else setNotice(errorText(answer));
    }
  });
}

// ---------------------------------------------------------------- game

function myColor(g) {
  return g.seat === 'white' ? 'w' : g.seat === 'black' ? 'b' : null;
}

function publicPos(g) {
  return parseFen(g.fen, g.variant);
}

function clockMs(g, side) {
  if (!g.clocks) return null;
  const base = side === 'white' ? g.clocks.white_ms : g.clocks.black_ms;
  if (g.clocks.running !== side || g.status !== 'playing') return base;
  const serverNow = Date.now() - (app.clockOffset ?? g.clocks.receivedAt - g.clocks.at);
  return Math.max(0, base - (serverNow - g.clocks.at));
}

function fmtClock(ms) {
  const s = Math.ceil(ms / 1000);
  if (ms < 10000) return `${Math.floor(ms / 60000)}:${String(Math.floor(ms / 1000) % 60).padStart(2, '0')}.${Math.floor((ms % 1000) / 100)}`;
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

function playerLine(g, side) {
  const p = g[side];
  const ms = clockMs(g, side);
  const low = ms !== null && ms < 20000;
  const running = g.clocks && g.clocks.running === side && g.status === 'playing';
  return `<div class="player ${side}" data-side="${side}">
    <span class="name">${p ? esc(p.name) : t('waitingForOpponent')}${p && p.bot ? ` <span class="badge bot">${t('bot')}</span>` : ''}${p && p.guest ? ` <small>(${t('guest')})</small>` : ''}</span>
    ${ms !== null ? `<span class="clock${low ? ' low' : ''}${running ? ' running' : ''}" data-clock="${side}" aria-label="${t('clockOf', { side: t(side) })}">${fmtClock(ms)}</span>` : ''}
  </div>`;
}

function outcomeText(o) {
  if (!o) return '';
  const who = o.result === 'draw' ? t('draw') : o.result === 'aborted' ? t('aborted') : t('wins', { side: t(o.result) });
  return `${who} — ${t('reason_' + o.reason)}`;
}

/** The result as a player of the game reads it ("You won — checkmate"); a spectator's is the plain one. */
function personalOutcome(g) {
  const o = g.outcome;
  if (!o || !myColor(g) || o.result === 'draw' || o.result === 'aborted') return outcomeText(o);
  return `${t(o.result === g.seat ? 'youWon' : 'youLost')} — ${t('reason_' + o.reason)}`;
}

// The start squares of a hidden layout's pieces, in the order of `shuffle.layout` (docs/protocol.md).
const LAYOUT_SQUARES = {
  w: ['a1', 'b1', 'c1', 'd1', 'f1', 'g1', 'h1', 'a2', 'b2', 'c2', 'd2', 'e2', 'f2', 'g2', 'h2'],
  b: ['a8', 'b8', 'c8', 'd8', 'f8', 'g8', 'h8', 'a7', 'b7', 'c7', 'd7', 'e7', 'f7', 'g7', 'h7'],
};

/** The published layout of a finished hidden game: square → {color, role}. */
function layoutPieces(shuffle) {
  const [w, b] = shuffle.layout.split('/');
  const out = {};
  [...w].forEach((c, i) => (out[parseSquare(LAYOUT_SQUARES.w[i])] = { color: 'w', role: c.toLowerCase() }));
  [...b].forEach((c, i) => (out[parseSquare(LAYOUT_SQUARES.b[i])] = { color: 'b', role: c.toLowerCase() }));
  return out;
}

function renderGame() {
  const main = $('#main.game-screen');
  if (!main) return;
  // Never rebuild the board under a piece being dragged (or the 3D board being turned):
  // draw once it is dropped.
  if (app.board && (app.board.drag || app.board.press) && app.board.el.isConnected) {
    app.board.afterDrag = renderGame;
    return;
  }
  const id = currentGameId();
  const g = app.games.get(id);
  if (!g) {
    main.innerHTML = `<p class="loading">${t('loading')}</p><p id="notice" class="notice" ${app.notice ? '' : 'hidden'}>${esc(app.notice?.text || '')}</p>`;
    if (app.conn && app.conn.ready && !app.opening) {
      app.opening = id;
      openGame(id);
      setTimeout(() => (app.opening = null), 2000);
    }
    return;
  }
  // A piece picked up by a first click stays picked through a redraw.
  const keepSelected = app.board && app.board.gameId === id && app.board.el.isConnected ? app.board.selected : -1;
  const mine = myColor(g);
  const view = viewOf(id);
  if (view.ply !== null && view.ply >= g.moves.length) view.ply = null;
  // Stepped back: an earlier position of this game, the live one going on meanwhile.
  const shown = view.ply === null ? null : positionAt(g, view.ply);
  if (!shown) view.ply = null;
  const stepped = !!shown;
  const shownPly = stepped ? view.ply : g.moves.length;
  const newMoves = stepped && g.moves.length > view.seen;
  const seatSide = g.seat === 'black' ? 'black' : 'white';
  const orientation = view.flipped ? (seatSide === 'white' ? 'black' : 'white') : seatSide;
  const top = orientation === 'white' ? 'black' : 'white';
  const bottom = orientation;
  const list = moveList(g.variant, g.moves);
  const rows = [];
  for (let i = 0; i < list.length; i += 2) {
    const cell = (m, ply) => {
      if (!m) return '<td></td>';
      const extra = [];
      if (m.reveal) extra.push(`<span class="reveal" title="${t('reveals', { role: roleName(ROLE_LETTER[m.reveal.role]) })}">${pieceIcon(ply % 2 === 0 ? 'w' : 'b', ROLE_LETTER[m.reveal.role], 16)}<span class="sr">${t('reveals', { role: roleName(ROLE_LETTER[m.reveal.role]) })}</span></span>`);
      if (m.captured && m.captured.hidden) extra.push(`<span class="cap-hidden" title="${t('capturedHidden')}">×?</span>`);
      return `<td data-ply="${ply + 1}"${ply + 1 === shownPly ? ' class="current" aria-current="step"' : ''}><span class="san">${esc(m.san)}</span>${extra.join('')}</td>`;
    };
    rows.push(`<tr><th>${i / 2 + 1}.</th>${cell(list[i], i)}${cell(list[i + 1], i + 1)}</tr>`);
  }
  const board0 = app.boards.get(id);
  const waiting = g.status === 'waiting';
  const inviteLink = board0 ? `${location.origin}/join/${board0.code}` : '';
  const captured = g.capturedIdentities;
  const opp = mine === 'w' ? 'b' : 'w';
  const myUnaccounted = mine && unaccounted(g, mine);
  const oppUnaccounted = mine && unaccounted(g, opp, captured);
  const countList = (c, color) =>
    c ? Object.entries(c).filter(([, n]) => n > 0).map(([r, n]) => `<span class="count" data-role="${r}">${pieceIcon(color, r, 20)}×${n}</span>`).join(' ') : '';
  const playing = g.status === 'playing';
  const myTurn = playing && mine && g.turn === g.seat;
  const vsBot = (g.white && g.white.bot) || (g.black && g.black.bot);
  const actions = [];
  if (mine && playing) {
    if (g.moves.length < 2) actions.push(`<button type="button" data-act="abort">${t('abort')}</button>`);
    actions.push(`<button type="button" data-act="resign">${t('resign')}</button>`);
    if (g.drawOffer && g.drawOffer !== g.seat) {
      actions.push(`<button type="button" data-act="accept_draw" class="primary">${t('acceptDraw')}</button><button type="button" data-act="decline_draw">${t('declineDraw')}</button>`);
    } else if (!g.drawOffer) actions.push(`<button type="button" data-act="offer_draw">${t('offerDraw')}</button>`);
    // Claim: only once the opponent may have been away as long as the server asks (it
    // tells the client nothing of its presence; see claimWaitMs); a countdown until then.
    if (!g.clock && !vsBot) {
      const wait = claimWaitMs(g);
      if (wait <= 0) actions.push(`<button type="button" data-act="claim_victory">${t('claimVictory')}</button>`);
      else actions.push(`<span class="claim-wait hint-text" id="claim-wait">${t('claimIn', { time: mmss(wait) })}</span>`);
    }
    // Take back: on the player's turn, with a move of theirs (and the reply) to take back.
    if (vsBot && g.variant !== 'hidden' && !g.rated && myTurn && !g.pendingPromotion && myPlies(g) > 0) {
      actions.push(`<button type="button" data-act="undo">${t('undo')}</button>`);
    }
  }
  if (mine && waiting) actions.push(`<button type="button" data-act="abort">${t('cancelBoard')}</button>`);
  main.innerHTML = `
    <section class="play">
      ${playerLine(g, top)}
      <div id="board" class="board${stepped ? ' stepped' : ''}" data-variant="${g.variant}"></div>
      ${playerLine(g, bottom)}
      <div class="row board-nav">
        <span class="row">
          <button type="button" id="step-first" aria-label="${t('first')}">⏮</button>
          <button type="button" id="step-prev" aria-label="${t('previous')}" title="${t('previous')} (←)">◀</button>
          <button type="button" id="step-next" aria-label="${t('next')}" title="${t('next')} (→)">▶</button>
          <button type="button" id="step-last" aria-label="${t('last')}">⏭</button>
        </span>
        ${stepped ? `<button type="button" id="back-live" class="${newMoves ? 'more' : ''}">${t('backToLive')}${newMoves ? ` — ${t('newMoves', { n: g.moves.length - view.seen })}` : ''}</button>` : ''}
        <span class="row">
          <button type="button" id="view3d" aria-pressed="${!!(store.get('view3d', false) && !app.three.failed)}">${t('view3d')}</button>
          <button type="button" id="flip" aria-pressed="${view.flipped}" title="${t('flipBoard')} (f)">${t('flipBoard')}</button>
          <button type="button" id="mute" aria-pressed="${muted()}">${t('muteSounds')}</button>
        </span>
      </div>
      <details class="looks" id="looks"${app.looksOpen ? ' open' : ''}><summary>${t('boardAndPieces')}</summary>
        <div class="settings-panel">
          <label>${t('boardTheme')} <select id="board-look">${options(BOARD_LOOKS, store.get('theme', 'green'), (v) => t('theme_' + v))}</select></label>
          <label>${t('pieceSet')} <select id="piece-set">${options(PIECE_SETS, store.get('pieces', 'frontier'), (v) => t('set_' + v))}</select></label>
        </div>
      </details>
    </section>
    <aside class="side">
      <p class="meta">${t('variant_' + g.variant)} · ${g.clock ? `${g.clock.minutes}+${g.clock.increment}` : t('noClock')} · ${g.rated ? t('rated') : t('casual')}${g.seat === 'spectator' ? ` · ${t('spectating')}` : ''}</p>
      ${waiting && board0 ? `<div class="invite card"><p>${t('shareCode')}</p><p><code class="code" id="board-code">${esc(board0.code)}</code></p><p><input id="invite" readonly value="${esc(inviteLink)}" aria-label="${t('inviteLink')}"> <button type="button" id="copy">${t('copy')}</button></p></div>` : ''}
      ${waiting && !board0 ? `<p>${t('waitingForOpponent')}</p>` : ''}
      <p id="turn" class="turn" role="status">${g.status === 'finished' ? esc(personalOutcome(g)) : playing ? (g.pendingPromotion ? t('promotionPending') : myTurn ? t('yourTurn') : t('turnOf', { side: t(g.turn) })) : ''}</p>
      ${playing && g.drawOffer ? `<p class="draw-offer" role="status">${t('drawOffered', { side: t(g.drawOffer) })}</p>` : ''}
      <p id="notice" class="notice" role="alert" ${app.notice && Date.now() - app.notice.at < 8000 ? '' : 'hidden'}>${esc(app.notice && Date.now() - app.notice.at < 8000 ? app.notice.text : '')}</p>
      <div class="actions">${actions.join('')}</div>
      ${mine && playing ? `<form id="move-input" class="move-input"><label>${t('typeMove')} <input name="move" autocomplete="off" aria-describedby="move-help"></label><button type="submit">${t('send')}</button><small id="move-help">${t('typeMoveHelp')}</small></form>` : ''}
      ${mine && playing && g.variant === 'hidden' ? `<label class="advance">${t('advanceChoice')} <select id="advance">${options(['ask', 'q', 'r', 'b', 'n'], store.get('advance', 'ask'), (v) => (v === 'ask' ? t('askMe') : roleName(v)))}</select></label>` : ''}
      <table class="moves" aria-label="${t('moves')}"><tbody>${rows.join('')}</tbody></table>
      ${g.variant === 'hidden' && mine ? `
        <div class="captured-ids" id="captured-ids"><h3>${t('capturedIdentities')}</h3>
          ${captured.length ? captured.map((c) => `<span class="cid" data-square="${esc(c.square)}" data-role="${esc(c.role)}">${pieceIcon(opp, ROLE_LETTER[c.role], 22)} ${esc(c.square)} <span class="sr">${roleName(ROLE_LETTER[c.role])}</span></span>`).join(' ') : `<small>${t('none')}</small>`}</div>
        <div class="unaccounted"><h3>${t('unaccountedMine')}</h3>${countList(myUnaccounted, mine)}<h3>${t('unaccountedTheirs')}</h3>${countList(oppUnaccounted, opp)}</div>` : ''}
      ${g.variant === 'hidden' && g.commitment ? `<p class="commitment"><small>${t('commitment')}: <code>${esc(g.commitment.slice(0, 16))}…</code></small></p>` : ''}
      ${g.status === 'finished' && app.dismissed === g.id ? rematchPart(g) : ''}
      <p><a href="#/">${t('backToLobby')}</a></p>
    </aside>
    ${g.pendingPromotion && myTurn ? promotionDialog(g) : ''}
    ${g.status === 'finished' && app.dismissed !== g.id ? resultDialog(g) : ''}`;
  const effects = app.effects.game === id && Date.now() < app.effects.until ? app.effects : { exploded: [], revealed: -1 };
  const last = g.moves.length ? g.moves[g.moves.length - 1].uci : null;
  const pos = publicPos(g);
  const canMove = myTurn && !g.pendingPromotion && !stepped;
  // The opponent's turn: a move may be queued (premove), one the rules could allow.
  const premovable = playing && mine && !myTurn && !g.pendingPromotion && !stepped;
  const premove = premovable ? app.premoves.get(id) : null;
  const handlers = {
    legalFrom: (sq) => (canMove ? legalMoves(pos).filter((m) => m.from === sq).map((m) => m.to) : premovable ? premoveDests(g, sq) : []),
    onMove: (from, to, dragged) => {
      if (canMove) {
        if (dragged) app.dragged = squareName(from) + squareName(to);
        attemptMove(g, from, to);
      } else if (premovable) {
        app.premoves.set(id, { from, to });
        renderGame();
      }
    },
    onCancel: () => cancelPremove(id),
  };
  const board3d = store.get('view3d', false) ? threeD() : null;
  if (board3d) {
    board3d.attach($('#board'), handlers);
    app.board = board3d;
  } else app.board = new BoardView($('#board'), handlers);
  app.board.gameId = id;
  app.board.selected = keepSelected;
  app.board.set({
    fen: stepped ? shown.fen : g.fen,
    variant: g.variant,
    orientation,
    last: stepped ? shown.last : last ? [parseSquare(last.slice(0, 2)), parseSquare(last.slice(2, 4))] : null,
    check: stepped ? inCheck(parseFen(shown.fen, g.variant)) : playing && !g.pendingPromotion && inCheck(pos),
    movable: canMove || premovable,
    premove: premove ? [premove.from, premove.to] : null,
    exploded: stepped ? [] : effects.exploded.map(parseSquare),
    revealed: stepped ? -1 : effects.revealed,
    anim: !stepped && effects.at ? effects : null,
    // The game over, the layout published: every piece still hidden turned over where it stands.
    unveil: !stepped && g.status === 'finished' && g.shuffle ? layoutPieces(g.shuffle) : null,
  });
  bindGame(g);
}

// ---------------------------------------------------------------- 3D

/**
 * The 3D board, if the player chose it and this browser can draw it: its module (with
 * three.js) is imported the first time only, the game drawn in 2D meanwhile and again in
 * 3D once it has come. Where WebGL is missing the board stays 2D, and the player is told.
 */
function threeD() {
  const s = app.three;
  if (s.board) return s.board;
  if (s.failed) return null;
  if (!s.module) {
    if (!s.loading) {
      s.loading = import('./board3d.js').then(
        (m) => {
          s.module = m;
          renderGame();
        },
        () => {
          // Not loaded (offline, or a browser without modules' dynamic import): try again next time.
          s.loading = null;
          s.failed = true;
          setNotice(t('no3d'));
          renderGame();
        },
      );
    }
    return null;
  }
  try {
    if (!s.module.webglAvailable()) throw new Error('no WebGL 2');
    s.board = new s.module.Board3D();
    return s.board;
  } catch {
    s.failed = true;
    setNotice(t('no3d'));
    $('#view3d')?.setAttribute('aria-pressed', 'false');
    return null;
  }
}

/** Switches between the 2D and the 3D board (kept in localStorage), mid-game too. */
function toggle3d() {
  const on = !(store.get('view3d', false) && !app.three.failed);
  // A second try after a failure asks the browser again.
  if (on) app.three.failed = false;
  store.set('view3d', on);
  savePreferences();
  renderGame();
}

const shows3d = () => !!(store.get('view3d', false) && app.three.board && app.board === app.three.board);

// The tests click the 3D board where a player would: a square's point on screen.
app.square3d = (name) => (shows3d() ? app.three.board.clientPointOf(name) : null);
app.scene3d = () => (shows3d() ? app.three.board.sceneState() : null);

function viewOf(id) {
  if (!app.views.has(id)) app.views.set(id, { flipped: false, ply: null, seen: 0 });
  return app.views.get(id);
}

/** Shows the position after `ply` plies; the last one is the live position. */
function stepTo(g, ply) {
  const view = viewOf(g.id);
  const n = g.moves.length;
  const to = Math.max(0, Math.min(n, ply));
  if (to === n) view.ply = null;
  else {
    if (view.ply === null) view.seen = n;
    view.ply = to;
  }
  renderGame();
}

function flip(g) {
  const view = viewOf(g.id);
  view.flipped = !view.flipped;
  renderGame();
}

/**
 * Where the piece on `from` could be premoved to: the moves the client's generator allows
 * it from this seat's view with this seat to move, and the captures it could make on a
 * square the opponent's move might fill (a recapture, a pawn's diagonal), tried with an
 * opponent's piece standing there. Never a move the rules could not allow.
 */
function premoveDests(g, from) {
  const mine = myColor(g);
  const key = `${g.fen}|${from}`;
  if (app.premoveCache && app.premoveCache.key === key) return app.premoveCache.dests;
  const pos = publicPos(g);
  const piece = pos.board[from];
  let dests = [];
  if (piece && piece.color === mine) {
    const asMine = { ...pos, turn: mine, ep: -1 };
    const found = new Set(legalMoves(asMine).filter((m) => m.from === from).map((m) => m.to));
    for (let sq = 0; sq < 64; sq++) {
      const p = pos.board[sq];
      if (sq === from || found.has(sq) || (p && (p.color !== mine || p.role === 'k'))) continue;
      const board = pos.board.slice();
      board[sq] = { color: mine === 'w' ? 'b' : 'w', role: 'n', hidden: false };
      if (legalMoves({ ...asMine, board }).some((m) => m.from === from && m.to === sq)) found.add(sq);
    }
    dests = [...found];
  }
  app.premoveCache = { key, dests };
  return dests;
}

function cancelPremove(id) {
  if (!app.premoves.delete(id)) return false;
  if (currentGameId() === id) renderGame();
  return true;
}

/** Plays the queued premove the instant it is this seat's turn, if still legal from its view. */
function tryPremove(g) {
  const pm = app.premoves.get(g.id);
  if (!pm || g.status !== 'playing' || g.turn !== g.seat || g.pendingPromotion) return;
  app.premoves.delete(g.id);
  const pos = publicPos(g);
  const moves = legalMoves(pos).filter((m) => m.from === pm.from && m.to === pm.to);
  if (!moves.length) {
    setNotice(t('premoveDropped'));
    return;
  }
  sendMove(g, moveText(g, pos, moves.find((m) => m.promotion === 'q') || moves[0]));
}

/** The UCI to send for a move (a hidden piece reaching the last rank: the advance choice, if made). */
function moveText(g, pos, m) {
  const piece = pos.board[m.from];
  const last = pos.turn === 'w' ? 7 : 0;
  const advance = store.get('advance', 'ask');
  return uciOf(m) + (piece.hidden && !m.promotion && rankOf(m.to) === last && advance !== 'ask' ? advance : '');
}

function bindGame(g) {
  const n = g.moves.length;
  const at = () => viewOf(g.id).ply ?? n;
  const on = (sel, fn) => {
    const el = $(sel);
    if (el) el.onclick = fn;
  };
  on('#step-first', () => stepTo(g, 0));
  on('#step-prev', () => stepTo(g, at() - 1));
  on('#step-next', () => stepTo(g, at() + 1));
  on('#step-last', () => stepTo(g, n));
  on('#back-live', () => stepTo(g, n));
  on('#flip', () => flip(g));
  on('#view3d', toggle3d);
  on('#mute', () => {
    setMuted(!muted());
    savePreferences();
    renderGame();
  });
  for (const td of document.querySelectorAll('.moves td[data-ply]')) td.onclick = () => stepTo(g, Number(td.dataset.ply));
  const looks = $('#looks');
  if (looks) {
    looks.ontoggle = () => (app.looksOpen = looks.open);
    // Noted at the click too: a redraw between the click and its toggle event (a frame
    // arriving) must not close the panel again.
    looks.querySelector('summary').onclick = () => (app.looksOpen = !looks.open);
  }
  const boardLook = $('#board-look');
  if (boardLook) boardLook.onchange = () => chooseLook('theme', boardLook.value);
  const pieceSet = $('#piece-set');
  if (pieceSet) pieceSet.onchange = () => chooseLook('pieces', pieceSet.value);
  for (const b of document.querySelectorAll('[data-act]')) {
    b.onclick = async () => {
      const act = b.dataset.act;
      // Resigning and aborting a game in play are asked again, in the page.
      if (act === 'resign' || (act === 'abort' && g.status === 'playing')) {
        const ok = await confirmInPage({
          text: t(act === 'resign' ? 'confirmResign' : 'confirmAbort'),
          yes: t(act === 'resign' ? 'resign' : 'abort'),
          opener: `[data-act="${act}"]`,
        });
        if (!ok || app.games.get(g.id)?.status !== 'playing') return;
      }
      const message = { type: act, game_id: g.id };
      if (act === 'undo') message.expected_version = g.version;
      const answer = await app.conn.send(message);
      if (answer.type === 'error') setNotice(errorText(answer));
    };
  }
  const copy = $('#copy');
  if (copy) copy.onclick = () => navigator.clipboard && navigator.clipboard.writeText($('#invite').value);
  const adv = $('#advance');
  if (adv) adv.onchange = () => store.set('advance', adv.value);
  const form = $('#move-input');
  if (form) {
    form.onsubmit = (e) => {
      e.preventDefault();
      const text = form.move.value.trim();
      const pos = publicPos(g);
      const m = findMove(pos, text.toLowerCase()) || legalMoves(pos).find((x) => san(pos, x).replace(/[+#]/g, '') === text.replace(/[+#!?]/g, ''));
      if (!m) {
        setNotice(t('notLegal'));
        return;
      }
      form.move.value = '';
      sendMove(g, uciOf(m));
    };
  }
  for (const b of document.querySelectorAll('[data-promote]')) {
    b.onclick = () => {
      if (g.pendingPromotion) {
        app.conn.send({ type: 'promote', game_id: g.id, role: b.dataset.promote }).then((a) => a.type === 'error' && setNotice(errorText(a)));
      } else if (app.promoting) {
        const { from, to } = app.promoting;
        app.promoting = null;
        sendMove(g, squareName(from) + squareName(to) + b.dataset.promote);
      }
      $('#promotion')?.remove();
    };
  }
  for (const b of document.querySelectorAll('[data-rematch]')) {
    b.onclick = async () => {
      const answer = await app.conn.send({ type: b.dataset.rematch, game_id: g.id });
      if (answer.type === 'error') setNotice(errorText(answer));
    };
  }
  const close = $('#close-result');
  if (close) close.onclick = () => {
    app.dismissed = g.id;
    renderGame();
  };
  const verify = $('#verify');
  if (verify) {
    verify.onclick = async () => {
      const ok = await verifyShuffle(g.shuffle.salt, g.shuffle.layout, g.commitment || g.shuffle.commitment);
      const same = !g.commitment || g.commitment === g.shuffle.commitment;
      // Kept with the game, so that a redraw of the dialog keeps the answer.
      app.verified = { id: g.id, ok: ok && same };
      renderGame();
    };
  }
}

function attemptMove(g, from, to) {
  const pos = publicPos(g);
  const moves = legalMoves(pos).filter((m) => m.from === from && m.to === to);
  if (!moves.length) {
    setNotice(t('notLegal'));
    renderGame();
    return;
  }
  if (moves.some((m) => m.promotion)) {
    app.promoting = { from, to };
    document.body.insertAdjacentHTML('beforeend', promotionDialog(g, true));
    bindGame(g);
    return;
  }
  // A hidden piece reaching the last rank might be a pawn: the advance choice goes with it.
  sendMove(g, moveText(g, pos, moves[0]));
}

/** Sends a move as the screen shows the game (its version as `expected_version`). */
function sendMove(g, text, version = g.version) {
  app.conn.send({ type: 'move', game_id: g.id, uci: text, expected_version: version }).then((answer) => {
    if (answer.type === 'error') setNotice(errorText(answer));
  });
}
// The tests' way to send what a stale screen or a forged drag would (the server refuses it).
app.debugMove = (text, version) => {
  const g = app.games.get(currentGameId());
  sendMove(g, text, version ?? g.version);
};

function promotionDialog(g, local = false) {
  const color = myColor(g);
  return `<div class="dialog" id="promotion" role="dialog" aria-modal="true" aria-labelledby="promo-title">
    <div class="card"><h2 id="promo-title">${local ? t('choosePromotion') : t('revealedPawn')}</h2>
    <div class="row">${['q', 'r', 'b', 'n'].map((r) => `<button type="button" data-promote="${r}" aria-label="${roleName(r)}">${pieceIcon(color, r, 48)}</button>`).join('')}</div></div></div>`;
}

/** The rematch part of the result dialog: only for the players of a game between people. */
function rematchPart(g) {
  const mine = myColor(g);
  if (!mine || (g.white && g.white.bot) || (g.black && g.black.bot)) return '';
  const r = app.rematches.get(g.id);
  let body;
  if (r && r.type === 'rematch_offered' && r.by === mine) {
    body = `<span role="status">${t('rematchOffered')}</span> <button type="button" data-rematch="decline_rematch">${t('rematchWithdraw')}</button>`;
  } else if (r && r.type === 'rematch_offered') {
    body = `<span role="status">${t('rematchIncoming')}</span> <button type="button" class="primary" data-rematch="accept_rematch">${t('rematchAccept')}</button> <button type="button" data-rematch="decline_rematch">${t('rematchDecline')}</button>`;
  } else {
    const why = r && r.type === 'rematch_cancelled' ? `<span role="status">${t('rematchEnded_' + r.reason)}</span> ` : '';
    body = `${why}<button type="button" data-rematch="offer_rematch">${t('rematch')}</button>`;
  }
  return `<p class="row rematch" id="rematch">${body}</p>`;
}

function resultDialog(g) {
  let layout = '';
  if (g.shuffle) {
    // The initial layout, drawn as the start position it was on a small board (the game's
    // own board shows every piece still hidden turned over, too).
    const [w, b] = g.shuffle.layout.split('/');
    const { w: wSq, b: bSq } = LAYOUT_SQUARES;
    const flipped = g.seat === 'black';
    const at = (name) => {
      const sq = parseSquare(name);
      const f = flipped ? 7 - (sq & 7) : sq & 7;
      const r = flipped ? sq >> 3 : 7 - (sq >> 3);
      return [f * 100, r * 100];
    };
    let squares = '';
    for (let sq = 0; sq < 64; sq++) {
      const [x, y] = at(squareName(sq));
      squares += `<rect class="${((sq & 7) + (sq >> 3)) % 2 ? 'light' : 'dark'}" x="${x}" y="${y}" width="100" height="100"/>`;
    }
    const cell = (sq, ch, color) => {
      const [x, y] = at(sq);
      return `<g class="lay" data-square="${sq}" data-layout="${color}${ch.toLowerCase()}">${pieceSvg({ color, role: ch.toLowerCase() }, x, y, 100)}</g>`;
    };
    const kings = ['e1', 'e8'].map((sq) => pieceSvg({ color: sq === 'e1' ? 'w' : 'b', role: 'k' }, ...at(sq), 100)).join('');
    layout = `<h3>${t('revealedLayout')}</h3><svg class="layout-board" viewBox="0 0 800 800" role="img" aria-label="${t('revealedLayout')}">${squares}${[...b].map((c, i) => cell(bSq[i], c, 'b')).join('')}${[...w].map((c, i) => cell(wSq[i], c, 'w')).join('')}${kings}</svg>
      <p><button type="button" id="verify">${t('verifyShuffle')}</button> <span id="verify-result" role="status" class="${app.verified?.id === g.id ? (app.verified.ok ? 'ok' : 'error') : ''}">${app.verified?.id === g.id ? t(app.verified.ok ? 'shuffleVerified' : 'shuffleMismatch') : ''}</span></p>`;
  }
  return `<div class="dialog result" id="result" role="dialog" aria-modal="true" aria-labelledby="result-title">
    <div class="card"><h2 id="result-title">${esc(personalOutcome(g))}</h2>${myColor(g) ? `<p id="result-detail">${esc(outcomeText(g.outcome))}</p>` : ''}${layout}${rematchPart(g)}
    <p class="row"><a href="#/record/${g.id}">${t('viewRecord')}</a> <a href="#/">${t('backToLobby')}</a> <button type="button" id="close-result">${t('close')}</button></p></div></div>`;
}

/** m:ss of a wait in ms (rounded up). */
function mmss(ms) {
  const s = Math.ceil(ms / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** The plies the player has made in `g`. */
function myPlies(g) {
  const n = g.moves.length;
  return g.seat === 'white' ? Math.ceil(n / 2) : g.seat === 'black' ? Math.floor(n / 2) : 0;
}

/**
 * How long until a claim of victory could be accepted (≤ 0: now). The server accepts one
 * once the opponent has been disconnected for the limit, counted from its last presence
 * report or the game's start (docs/protocol.md, `claim_victory`), and tells the client
 * nothing of the opponent's presence. The opponent was present at its last move, and the
 * game had started when this client first saw it: a claim cannot succeed before the later
 * of those plus the limit. From then on the button is offered, and the server's answer
 * (`cannot_claim`: "your opponent is connected") says the rest.
 */
function claimWaitMs(g) {
  if (!app.opponentSeen.has(g.id)) app.opponentSeen.set(g.id, Date.now());
  return app.opponentSeen.get(g.id) + app.claimAfterMs - Date.now();
}

/**
 * Asks in the page (never the browser's confirm()): a modal dialog whose confirm button
 * says what happens, and a cancel button focused first; Tab stays in it, Escape cancels;
 * focus returns to what opened it. Resolves to true when confirmed. Drawn beside the
 * screen (not in #main), so a frame redrawing the game leaves it open.
 */
function confirmInPage({ text, yes, opener }) {
  const old = $('#confirm');
  if (old) old.remove();
  return new Promise((resolve) => {
    const box = document.createElement('div');
    box.className = 'dialog confirm';
    box.id = 'confirm';
    box.setAttribute('role', 'alertdialog');
    box.setAttribute('aria-modal', 'true');
    box.setAttribute('aria-labelledby', 'confirm-text');
    box.innerHTML = `<div class="card"><p id="confirm-text">${esc(text)}</p>
      <p class="row"><button type="button" id="confirm-yes" class="danger">${esc(yes)}</button> <button type="button" id="confirm-no">${t('cancel')}</button></p></div>`;
    document.body.append(box);
    const yesB = $('#confirm-yes', box);
    const noB = $('#confirm-no', box);
    const done = (ok) => {
      box.remove();
      const back = opener && $(opener);
      if (back) back.focus();
      resolve(ok);
    };
    yesB.onclick = () => done(true);
    noB.onclick = () => done(false);
    box.onclick = (e) => e.target === box && done(false);
    box.addEventListener('keydown', (e) => {
      e.stopPropagation();
      if (e.key === 'Escape') {
        e.preventDefault();
        done(false);
      } else if (e.key === 'Tab') {
        e.preventDefault();
        (document.activeElement === yesB ? noB : yesB).focus();
      }
    });
    noB.focus();
  });
}

// Clocks tick between frames from the last reading.
setInterval(() => {
  // The time a standing seek has waited (shown in the lobby, where no game is on screen).
  if (app.seek) {
    const w = $('#seek-wait');
    if (w) w.textContent = `${Math.max(0, Math.floor((Date.now() - app.seek.since) / 1000))} s`;
  }
  const g = app.games.get(currentGameId());
  // The countdown to a claim of victory; the button once it is due.
  const claimEl = $('#claim-wait');
  if (g && claimEl) {
    const wait = claimWaitMs(g);
    if (wait <= 0) renderGame();
    else claimEl.textContent = t('claimIn', { time: mmss(wait) });
  }
  if (!g || !g.clocks) return;
  for (const side of ['white', 'black']) {
    const ms = clockMs(g, side);
    // My own clock running low: one warning a game.
    if (side === g.seat && g.status === 'playing' && g.clocks.running === side && ms < 20000 && !app.lowWarned.has(g.id)) {
      app.lowWarned.add(g.id);
      playSound('lowtime');
    }
    const el = document.querySelector(`[data-clock="${side}"]`);
    if (!el) continue;
    el.textContent = fmtClock(ms);
    el.classList.toggle('low', ms < 20000);
  }
}, 100);

// ---------------------------------------------------------------- dashboard

function ratingChart(points) {
  if (points.length < 1) return `<p><small>${t('noRatedGames')}</small></p>`;
  const values = [1500, ...points.map((p) => p.rating)];
  const lo = Math.min(...values) - 20;
  const hi = Math.max(...values) + 20;
  const x = (i) => 10 + (i * 280) / Math.max(1, values.length - 1);
  const y = (v) => 110 - ((v - lo) / (hi - lo)) * 100;
  const path = values.map((v, i) => `${i ? 'L' : 'M'}${x(i).toFixed(1)} ${y(v).toFixed(1)}`).join(' ');
  return `<svg class="chart" viewBox="0 0 300 120" role="img" aria-label="${t('ratingHistory')}"><path d="${path}" fill="none"/>${values.map((v, i) => `<circle cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="3"><title>${Math.round(v)}</title></circle>`).join('')}</svg>`;
}

async function renderDashboard(id) {
  const main = $('#main.dashboard');
  main.innerHTML = `<p class="loading">${t('loading')}</p>`;
  try {
    const player = await api(`/api/players/${id}`);
    const variant = app.dashVariant || 'standard';
    const [history, games] = await Promise.all([
      api(`/api/players/${id}/rating-history?variant=${variant}`),
      api(`/api/players/${id}/games?limit=10${app.dashBefore ? `&before=${encodeURIComponent(app.dashBefore)}` : ''}`),
    ]);
    // Left for another screen while the answers came: nothing of this one is drawn there.
    if (!main.isConnected) return;
    const changes = new Map();
    history.points.forEach((p, i) => changes.set(p.game_id, p.rating - (i ? history.points[i - 1].rating : 1500)));
    const ratings = VARIANTS.map((v) => {
      const r = player.ratings[v];
      return `<tr><th>${t('variant_' + v)}</th><td class="rating" data-variant="${v}">${Math.round(r.rating)}${r.provisional ? `<abbr title="${t('provisional')}">?</abbr>` : ''}</td><td>${r.games}</td><td>${r.wins}/${r.draws}/${r.losses}</td></tr>`;
    }).join('');
    const rows = games.games.map((gm) => {
      const me = gm.white.id === id ? 'white' : 'black';
      const res = gm.result === 'draw' ? '½' : gm.result === 'aborted' ? '–' : gm.result === me ? '1' : '0';
      const change = gm.rated && gm.variant === variant && changes.has(gm.id) ? changes.get(gm.id) : null;
      return `<tr><td><a href="#/record/${gm.id}">${new Date(gm.ended_at).toLocaleString(lang())}</a></td><td>${t('variant_' + gm.variant)}</td><td>${esc(gm.white.name)} ${t('vs')} ${esc(gm.black.name)}</td><td>${res}</td><td>${gm.rated ? t('rated') : t('casual')}</td><td class="change">${change === null ? '' : `${change >= 0 ? '+' : '−'}${Math.abs(Math.round(change))}`}</td></tr>`;
    }).join('');
    main.innerHTML = `<section class="card"><h1>${esc(player.name)}${player.guest ? ` <small>(${t('guest')})</small>` : ''}</h1>
      <table class="ratings"><thead><tr><th>${t('variant')}</th><th>${t('rating')}</th><th>${t('games')}</th><th>${t('winsDrawsLosses')}</th></tr></thead><tbody>${ratings}</tbody></table></section>
      <section class="card"><h2>${t('ratingHistory')}</h2>
      <label>${t('variant')} <select id="dash-variant">${options(VARIANTS, variant, (v) => t('variant_' + v))}</select></label>${ratingChart(history.points)}</section>
      <section class="card"><h2>${t('games')}</h2><table class="games"><thead><tr><th>${t('date')}</th><th>${t('variant')}</th><th>${t('players')}</th><th>${t('result')}</th><th></th><th>${t('ratingChange')}</th></tr></thead><tbody>${rows || `<tr><td colspan="6">${t('none')}</td></tr>`}</tbody></table>
      <p class="row">${app.dashBefore ? `<button type="button" id="first-page">${t('firstPage')}</button>` : ''}${games.next ? `<button type="button" id="next-page" data-next="${esc(games.next)}">${t('older')}</button>` : ''}</p></section>`;
    $('#dash-variant').onchange = (e) => {
      app.dashVariant = e.target.value;
      renderDashboard(id);
    };
    const next = $('#next-page');
    if (next) next.onclick = () => {
      app.dashBefore = next.dataset.next;
      renderDashboard(id);
    };
    const first = $('#first-page');
    if (first) first.onclick = () => {
      app.dashBefore = null;
      renderDashboard(id);
    };
  } catch (e) {
    main.innerHTML = `<p class="error">${esc(apiErrorText(e))}</p>`;
  }
}

async function renderLeaderboard() {
  const main = $('#main.leaderboard');
  const variant = app.boardVariant || 'standard';
  try {
    const lb = await api(`/api/leaderboard?variant=${variant}`);
    if (!main.isConnected) return;
    const rows = lb.players.map((p, i) => `<tr><td>${i + 1}</td><td><a href="#/player/${p.id}">${esc(p.name)}</a></td><td>${Math.round(p.rating)}</td><td>${p.rated_games}</td></tr>`).join('');
    main.innerHTML = `<section class="card"><h1>${t('leaderboard')}</h1><label>${t('variant')} <select id="lb-variant">${options(VARIANTS, variant, (v) => t('variant_' + v))}</select></label>
      <table><thead><tr><th>#</th><th>${t('player')}</th><th>${t('rating')}</th><th>${t('games')}</th></tr></thead><tbody>${rows || `<tr><td colspan="4">${t('leaderboardEmpty')}</td></tr>`}</tbody></table></section>`;
    $('#lb-variant').onchange = (e) => {
      app.boardVariant = e.target.value;
      renderLeaderboard();
    };
  } catch (e) {
    main.innerHTML = `<p class="error">${esc(apiErrorText(e))}</p>`;
  }
}

// ---------------------------------------------------------------- moderation

// The fair-play moderators' screens (docs/protocol.md, Moderation): the queue of reports,
// a report's analysed games with the flagged moves, dismiss / mark with a note, and the
// audit log. Shown to a token with the moderator claim; the server refuses anyone else
// (`forbidden`), which these screens show as any error.
const MOD_STATUSES = ['open', 'dismissed', 'marked', 'all'];
const modState = { status: 'open', cursor: null, logCursor: null };

function modApi(path, options = {}) {
  return api(path, { ...options, token: app.token });
}

function modNav(current) {
  const link = (href, key) => `<a href="${href}" ${current === key ? 'aria-current="page"' : ''}>${t(key)}</a>`;
  return `<nav class="row mod-nav" aria-label="${t('moderation')}">${link('#/moderation', 'modReports')} ${link('#/moderation/log', 'modLog')}</nav>`;
}

const fmtWhen = (ms) => new Date(ms).toLocaleString(lang());
const pct = (x) => `${Math.round(x * 100)}%`;

function reasonText(r) {
  const name = t('fpReason_' + r.code);
  return `${name === 'fpReason_' + r.code ? esc(r.code) : name} (${esc(String(r.value))} / ${esc(String(r.threshold))})`;
}

function modError(main, e) {
  // The links to the other moderation screens for a moderator only (anyone else is refused
  // there too).
  main.innerHTML = `<section class="card"><h1>${t('moderation')}</h1>${isModerator() ? modNav() : ''}<p class="error" role="alert">${esc(apiErrorText(e))}</p></section>`;
}

/**
 * A screen drawn again by one of its own controls: the focus goes back to that control (the
 * first of `selectors` that is still there), not to the page's start.
 */
async function refocus(draw, ...selectors) {
  await draw();
  const el = selectors.map((s) => $(s)).find(Boolean);
  if (el) el.focus();
}

async function renderModerationQueue() {
  const main = $('#main.moderation');
  main.innerHTML = `<p class="loading">${t('loading')}</p>`;
  let page;
  try {
    const cursor = modState.cursor ? `&cursor=${encodeURIComponent(modState.cursor)}` : '';
    page = await modApi(`/api/moderation/reports?status=${modState.status}&limit=20${cursor}`);
  } catch (e) {
    if (main.isConnected) modError(main, e);
    return;
  }
  // Drawn again meanwhile (a language or scheme switch, another route): that draw stands.
  if (!main.isConnected) return;
  const rows = page.reports.map((r) => `<tr data-report="${esc(r.id)}"><td><a href="#/moderation/report/${esc(r.id)}">${esc(r.player.name)}</a></td><td>${t('variant_' + r.variant)}</td><td class="score">${Math.round(r.score)}</td><td>${r.reasons.map(reasonText).join(', ')}</td><td>${r.games}</td><td>${t('modStatus_' + r.status)}</td><td>${fmtWhen(r.created_at)}</td></tr>`).join('');
  main.innerHTML = `<section class="card"><h1>${t('moderation')}</h1>${modNav('modReports')}
    <label>${t('modStatus')} <select id="mod-status">${options(MOD_STATUSES, modState.status, (v) => t('modStatus_' + v))}</select></label>
    <table class="mod-queue"><thead><tr><th>${t('player')}</th><th>${t('variant')}</th><th>${t('modScore')}</th><th>${t('modReasons')}</th><th>${t('games')}</th><th>${t('modStatus')}</th><th>${t('date')}</th></tr></thead>
    <tbody>${rows || `<tr><td colspan="7">${t('modNoReports')}</td></tr>`}</tbody></table>
    <p class="row">${modState.cursor ? `<button type="button" id="mod-first">${t('firstPage')}</button>` : ''}${page.next ? `<button type="button" id="mod-next" data-next="${esc(page.next)}">${t('modOlder')}</button>` : ''}</p></section>`;
  $('#mod-status').onchange = (e) => {
    modState.status = e.target.value;
    modState.cursor = null;
    refocus(renderModerationQueue, '#mod-status');
  };
  const next = $('#mod-next');
  if (next) next.onclick = () => {
    modState.cursor = next.dataset.next;
    refocus(renderModerationQueue, '#mod-next', '#mod-first');
  };
  const first = $('#mod-first');
  if (first) first.onclick = () => {
    modState.cursor = null;
    refocus(renderModerationQueue, '#mod-next', '#mod-status');
  };
}

function analysedGame(g, i) {
  const moves = g.moves.map((m) => `<tr class="${m.flagged ? 'flagged' : ''}"${m.flagged ? ' data-flagged="true"' : ''}><td>${m.ply}</td><td>${esc(m.played)}</td><td>${esc(m.best)}</td><td>${m.loss_cp}</td><td>${m.think_ms ? (m.think_ms / 1000).toFixed(1) : '–'}</td><td>${m.skipped ? t('modSkip_' + m.skipped) : ''}</td><td>${m.flagged ? `<strong>⚑ ${t('modFlagged')}</strong>` : ''}</td></tr>`).join('');
  return `<section class="card mod-game" aria-labelledby="mod-game-${i}">
    <h2 id="mod-game-${i}">${t('vs')} ${esc(g.opponent)} · ${t(g.color)} · ${t('variant_' + g.variant)}</h2>
    <p>${fmtWhen(g.ended_at)} · <a href="#/record/${esc(g.id)}">${t('modReplay')}</a></p>
    <dl class="mod-stats"><dt>${t('modScore')}</dt><dd>${Math.round(g.score)}</dd><dt>${t('rating')}</dt><dd>${Math.round(g.rating)}</dd><dt>${t('modTop1')}</dt><dd>${pct(g.top1)}</dd><dt>${t('modAcpl')}</dt><dd>${g.acpl}</dd><dt>${t('modNearBest')}</dt><dd>${pct(g.near_best)}</dd><dt>${t('modThinkCv')}</dt><dd>${g.think_cv}</dd><dt>${t('modCounted')}</dt><dd>${g.counted_moves}</dd></dl>
    <table class="mod-moves"><caption class="sr">${t('modMoves')}</caption><thead><tr><th>${t('modPly')}</th><th>${t('modPlayed')}</th><th>${t('modBest')}</th><th>${t('modLoss')}</th><th>${t('modThink')}</th><th>${t('modSkipped')}</th><th>${t('modFlagged')}</th></tr></thead><tbody>${moves}</tbody></table>
  </section>`;
}

async function renderReport(id) {
  const main = $('#main.moderation');
  main.innerHTML = `<p class="loading">${t('loading')}</p>`;
  let detail;
  try {
    detail = await modApi(`/api/moderation/reports/${encodeURIComponent(id)}`);
  } catch (e) {
    if (main.isConnected) modError(main, e);
    return;
  }
  if (!main.isConnected) return;
  const r = detail.report;
  const decided = r.decided ? `<p class="mod-decided">${t('modDecided', { name: esc(r.decided.by.name), date: fmtWhen(r.decided.at) })}${r.decided.note ? `: ${esc(r.decided.note)}` : ''}</p>` : '';
  const actions = r.status === 'open'
    ? `<button type="button" id="mod-dismiss">${t('modDismiss')}</button> <button type="button" id="mod-mark" class="danger">${t('modMark')}</button>`
    : r.status === 'marked' ? `<button type="button" id="mod-unmark">${t('modUnmark')}</button>` : '';
  main.innerHTML = `<section class="card"><h1>${t('modReportOn', { name: esc(r.player.name) })}</h1>${modNav()}
    <p>${t('variant_' + r.variant)} · ${t('modStatus_' + r.status)} · ${t('modScore')} <strong>${Math.round(r.score)}</strong> · ${t('rating')} ${Math.round(r.rating)} · ${t('games')} ${r.games}</p>
    <h2>${t('modReasons')}</h2><ul class="mod-reasons">${r.reasons.map((x) => `<li>${reasonText(x)}${x.detail ? ` — ${esc(x.detail)}` : ''}</li>`).join('')}</ul>
    ${decided}
    ${actions ? `<form id="mod-decide" class="mod-decide"><label>${t('modNote')} <textarea id="mod-note" maxlength="500" rows="2"></textarea></label><p class="row">${actions}</p><p class="error" id="mod-error" role="alert"></p></form>` : ''}
  </section>
  ${detail.games.map(analysedGame).join('')}`;
  const form = $('#mod-decide');
  if (!form) return;
  form.onsubmit = (e) => e.preventDefault();
  const act = async (button, confirmKey, yesKey, call) => {
    const ok = await confirmInPage({ text: t(confirmKey, { name: r.player.name }), yes: t(yesKey), opener: '#' + button });
    if (!ok) return;
    try {
      await call($('#mod-note').value);
      renderReport(id);
    } catch (err) {
      $('#mod-error').textContent = apiErrorText(err);
    }
  };
  const decide = (action) => (note) => modApi(`/api/moderation/reports/${encodeURIComponent(id)}/decision`, { method: 'POST', body: { action, note } });
  const dismiss = $('#mod-dismiss');
  if (dismiss) dismiss.onclick = () => act('mod-dismiss', 'modConfirmDismiss', 'modDismiss', decide('dismiss'));
  const mark = $('#mod-mark');
  if (mark) mark.onclick = () => act('mod-mark', 'modConfirmMark', 'modMark', decide('mark'));
  const unmark = $('#mod-unmark');
  if (unmark) unmark.onclick = () => act('mod-unmark', 'modConfirmUnmark', 'modUnmark', (note) => modApi(`/api/moderation/players/${encodeURIComponent(r.player.id)}/unmark`, { method: 'POST', body: { note } }));
}

async function renderAuditLog() {
  const main = $('#main.moderation');
  main.innerHTML = `<p class="loading">${t('loading')}</p>`;
  let page;
  try {
    const cursor = modState.logCursor ? `&cursor=${encodeURIComponent(modState.logCursor)}` : '';
    page = await modApi(`/api/moderation/log?limit=50${cursor}`);
  } catch (e) {
    if (main.isConnected) modError(main, e);
    return;
  }
  if (!main.isConnected) return;
  const rows = page.entries.map((x) => `<tr><td>${fmtWhen(x.at)}</td><td>${t('modAction_' + x.action)}</td><td>${x.report_id ? `<a href="#/moderation/report/${esc(x.report_id)}">${esc(x.player.name)}</a>` : esc(x.player.name)}</td><td>${esc(x.moderator.name)}</td><td>${esc(x.note)}</td></tr>`).join('');
  main.innerHTML = `<section class="card"><h1>${t('modLog')}</h1>${modNav('modLog')}
    <table class="mod-log"><thead><tr><th>${t('date')}</th><th>${t('modAction')}</th><th>${t('player')}</th><th>${t('modModerator')}</th><th>${t('modNote')}</th></tr></thead>
    <tbody>${rows || `<tr><td colspan="5">${t('modNoEntries')}</td></tr>`}</tbody></table>
    <p class="row">${modState.logCursor ? `<button type="button" id="log-first">${t('firstPage')}</button>` : ''}${page.next ? `<button type="button" id="log-next" data-next="${esc(page.next)}">${t('modOlder')}</button>` : ''}</p></section>`;
  const next = $('#log-next');
  if (next) next.onclick = () => {
    modState.logCursor = next.dataset.next;
    refocus(renderAuditLog, '#log-next', '#log-first');
  };
  const first = $('#log-first');
  if (first) first.onclick = () => {
    modState.logCursor = null;
    refocus(renderAuditLog, '#log-next', '.mod-nav a');
  };
}

async function renderRecord(id) {
  const main = $('#main.record');
  main.innerHTML = `<p class="loading">${t('loading')}</p>`;
  let rec;
  try {
    rec = await api(`/api/games/${id}`);
  } catch (e) {
    if (main.isConnected) main.innerHTML = `<p class="error">${esc(apiErrorText(e))}</p>`;
    return;
  }
  // Left for another screen while the record came: nothing of it is drawn there (its
  // `#board` would be that screen's — a live game's board showed the record's position).
  if (!main.isConnected) return;
  // Replay with the published layout: every position of the game, public as it was shown.
  const positions = [startPosition(rec.variant)];
  let pos = positions[0];
  const moves = rec.moves.map((m) => ({ uci: m.uci, reveal: m.reveal_square ? { square: m.reveal_square, role: m.reveal_role } : null, captured: null }));
  for (const m of moves) {
    const found = findMove(pos, m.uci) || findMove(pos, m.uci.slice(0, 4));
    if (!found) break;
    const promotion = m.uci.length === 5 ? m.uci[4] : undefined;
    pos = play(pos, promotion && !found.promotion ? { ...found, promotion } : found, m.reveal ? ROLE_LETTER[m.reveal.role] : undefined);
    pos.lastMove = [found.from, found.to];
    positions.push(pos);
  }
  let ply = positions.length - 1;
  const list = moveList(rec.variant, moves);
  const draw = () => {
    main.innerHTML = `<section class="play"><div id="board" class="board"></div>
      <div class="row replay"><button type="button" id="r-first" aria-label="${t('first')}">⏮</button><button type="button" id="r-prev" aria-label="${t('previous')}">◀</button><span>${ply}/${positions.length - 1}</span><button type="button" id="r-next" aria-label="${t('next')}">▶</button><button type="button" id="r-last" aria-label="${t('last')}">⏭</button></div></section>
      <aside class="side card"><h1>${esc(rec.white.name)} ${t('vs')} ${esc(rec.black.name)}</h1><p>${t('variant_' + rec.variant)} · ${rec.rated ? t('rated') : t('casual')} · ${esc(outcomeText({ result: rec.result, reason: rec.outcome.replace(/^(white|black|draw)-/, '') }))}</p>
      <p class="movetext">${list.map((m, i) => `${i % 2 === 0 ? `${i / 2 + 1}. ` : ''}<span class="${i + 1 === ply ? 'current' : ''}">${esc(m.san)}</span>`).join(' ')}</p>
      <p><a href="/api/games/${id}/pgn" download="frontier-${id}.pgn">${t('downloadPgn')}</a></p></aside>`;
    const view = new BoardView(main.querySelector('#board'), { legalFrom: () => [], onMove: () => {} });
    view.set({ fen: toFenSafe(positions[ply], rec), variant: rec.variant, orientation: 'white', last: positions[ply].lastMove || null });
    $('#r-first').onclick = () => ((ply = 0), draw());
    $('#r-prev').onclick = () => ((ply = Math.max(0, ply - 1)), draw());
    $('#r-next').onclick = () => ((ply = Math.min(positions.length - 1, ply + 1)), draw());
    $('#r-last').onclick = () => ((ply = positions.length - 1), draw());
  };
  draw();
}

function toFenSafe(pos, rec) {
  return pos === undefined ? rec.final_fen : toFen(pos);
}

// ---------------------------------------------------------------- start

function start() {
  setLang(store.get('lang', detectLang()));
  const token = store.get('token');
  if (token && tokenValid(token)) {
    app.token = token;
    app.player = store.get('player');
    for (const [id, board] of store.get('boards', [])) app.boards.set(id, board);
  }
  const join = location.pathname.match(/^\/join\/([\w-]+)/);
  if (join) {
    app.pendingJoin = join[1].toUpperCase();
    history.replaceState(null, '', '/');
  }
  // The game screen's keys: f flips the board, ← → step through the moves (Home, End: the
  // start, the live position), Escape cancels a premove.
  document.addEventListener('keydown', (e) => {
    const g = app.games.get(currentGameId());
    if (!g || e.ctrlKey || e.metaKey || e.altKey || !$('#main.game-screen')) return;
    if (e.target && e.target.closest && e.target.closest('input, select, textarea')) return;
    const ply = viewOf(g.id).ply ?? g.moves.length;
    if (e.key === 'Escape') {
      if (cancelPremove(g.id)) e.preventDefault();
      return;
    }
    if (e.key === 'f' || e.key === 'F') flip(g);
    else if (e.key === 'ArrowLeft') stepTo(g, ply - 1);
    else if (e.key === 'ArrowRight') stepTo(g, ply + 1);
    else if (e.key === 'Home') stepTo(g, 0);
    else if (e.key === 'End') stepTo(g, g.moves.length);
    else return;
    e.preventDefault();
  });
  window.addEventListener('hashchange', () => {
    app.notice = null;
    render();
  });
  if (app.token) {
    connect();
    loadPreferences();
  } else if (app.pendingJoin) app.flash = t('enterToJoin');
  render();
}

start();
