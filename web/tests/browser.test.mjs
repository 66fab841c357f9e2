// The web client in a real Chromium (Debian's `chromium`, driven by playwright-core)
// against a `frontier dev --memory` this test starts on a free port. Run by
// `make browser-test` (part of `make test`); FRONTIER_BIN names the `frontier` binary,
// built with `--features test-hooks` (the fixed hidden layout). Screenshots of each
// screen go to web/tests/out/screenshots/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { gzipSync } from 'node:zlib';
import { LANGS } from '../app/js/i18n.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const SHOTS = `${HERE}out/screenshots/`;
const BIN = process.env.FRONTIER_BIN || `${HERE}../../target/debug/frontier`;
const CHROMIUM = process.env.CHROMIUM || ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
// White: a1 pawn, b1 queen, c1 bishop, d1 rook, f1 bishop, g1 rook, h1 knight, a2 knight,
// b2–h2 pawns. Black: a8 rook, b8 knight, c8 bishop, d8 queen, f8 bishop, g8 rook, h8 pawn,
// a7 knight, b7–h7 pawns. (As tests/tests/scenarios.rs.)
const LAYOUT = 'PQBRBRNNPPPPPPP/rnbqbrpnppppppp';
const WAIT = 20000;
// One clock "minute" of the test server: a 1-minute game starts just above the
// low-time warning (20 s).

let server;
let base;
let browser;
let chromium;
const SKIP = !CHROMIUM ? 'SKIPPED: no Chromium found (install Debian\'s `chromium`, or set CHROMIUM=path)' : null;
if (SKIP) console.log(`\n*** browser tests ${SKIP} ***\n`);

before(async () => {
  if (SKIP) return;
  ({ chromium } = await import('playwright-core'));
  mkdirSync(SHOTS, { recursive: true });
  assert.ok(existsSync(BIN), `no frontier binary at ${BIN} (set FRONTIER_BIN)`);
  // Quick match: a bot after 2 s in standard 5+0 casual, no bot in any other pool.
  ({ proc: server, base } = await startServer(['--bot-after', '0', '--bot-after-pool', 'standard:5+0:casual=2s']));
  // No GPU: WebGL (the 3D board) is drawn by SwiftShader, in software.
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--enable-unsafe-swiftshader'] });
});

after(async () => {
  if (browser) await browser.close();
  if (server) server.kill('SIGTERM');
});

/**
 * A `frontier dev --memory` on a free port with the test hooks and `extra` flags: {proc, base}.
 * `data`: a folder instead of memory (accounts in its SQLite `frontier.db`, which `frontier
 * admin` can reach).
 */
async function startServer(extra, { data } = {}) {
  const store = data ? ['--data', data] : ['--memory'];
  const proc = spawn(BIN, ['dev', ...store, '--listen', '127.0.0.1:0', '--test-fixed-layout', LAYOUT, '--test-clock-minute', '21s', '--hash-threads', '2', ...extra], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, RUST_LOG: process.env.RUST_LOG || 'warn' },
  });
  const at = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/running at (http:\/\/[\d.:]+)\//);
      if (m) resolve(m[1]);
    });
    proc.on('exit', (code) => reject(new Error(`frontier dev exited (${code})`)));
  });
  return { proc, base: at };
}

/**
 * Answers the page's own confirmation dialog (never the browser's confirm()): it is open,
 * focus is on its cancel button; `yes` confirms, else cancels.
 */
async function confirmInPage(page, yes = true) {
  await page.waitForSelector('#confirm[role=alertdialog]', { timeout: WAIT });
  await page.click(yes ? '#confirm-yes' : '#confirm-no');
  await page.waitForSelector('#confirm', { state: 'detached', timeout: WAIT });
}

/**
 * A browser context (its own storage: one player) with a page on the client. `audio`: a spy
 * on the page's AudioContext counts the contexts made and the sound sources started
 * (`window.__audio`); `reducedMotion`: 'reduce' as a player who asked for less motion.
 */
async function player(viewport = { width: 1200, height: 900 }, { audio = false, reducedMotion = 'no-preference', at = base } = {}) {
  const context = await browser.newContext({ viewport, locale: 'en-US', reducedMotion });
  if (audio) {
    await context.addInitScript(() => {
      window.__audio = { made: 0, started: 0 };
      const Real = window.AudioContext;
      const count = (node) => {
        const start = node.start.bind(node);
        node.start = (...args) => {
          window.__audio.started += 1;
          return start(...args);
        };
        return node;
      };
      window.AudioContext = class extends Real {
        constructor(...args) {
          super(...args);
          window.__audio.made += 1;
        }
        createOscillator() {
          return count(super.createOscillator());
        }
        createBufferSource() {
          return count(super.createBufferSource());
        }
      };
    });
  }
  const page = await context.newPage();
  const received = [];
  // The frames as the browser received them, independently of the client's own code.
  page.on('websocket', (ws) => ws.on('framereceived', (f) => {
    try {
      received.push(JSON.parse(f.payload));
    } catch {
      /* not JSON */
    }
  }));
  page.on('pageerror', (e) => console.error('page error:', e.stack || e.message));
  // The client asks nothing through the browser's own dialogs (confirm(), alert()).
  page.on('dialog', (d) => {
    console.error('browser dialog:', d.message());
    page.__nativeDialogs = (page.__nativeDialogs || 0) + 1;
    d.dismiss();
  });
  await page.goto(at + '/');
  return { context, page, received };
}

async function enterAsGuest(page) {
  await page.click('#guest');
  await page.waitForFunction(() => window.frontier.status === 'online', null, { timeout: WAIT });
}

async function register(page, name) {
  await page.fill('input[name=username]', name);
  await page.fill('input[name=password]', 'correct horse battery 9');
  await page.click('button[name=register]');
  await page.waitForFunction(() => window.frontier.status === 'online', null, { timeout: WAIT });
}

/**
 * Chooses a quick-match pool on the lobby form. The lobby may be redrawn at any moment (a
 * frame arrives, the connection status changes) — the redrawn form keeps the choices the
 * form remembered — so the choice is made again until the drawn form shows it through two
 * animation frames (seen on loaded CI machines: a pool chosen on a form being replaced).
 */
async function chooseSeek(page, variant, pool) {
  for (let attempt = 0; attempt < 20; attempt += 1) {
    await page.selectOption('#seek select[name=variant]', variant);
    await page.selectOption('#seek select[name=pool]', pool);
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const shown = await page.evaluate(() => [
      document.querySelector('#seek select[name=variant]')?.value,
      document.querySelector('#seek select[name=pool]')?.value,
    ]);
    if (shown[0] === variant && shown[1] === pool) return;
  }
  assert.fail(`the lobby never kept ${variant} ${pool}`);
}

/** Creates a private board from the lobby form; returns {id, code}. */
async function createBoard(page, { variant, color = 'white', rated = false, minutes = 0 }) {
  await page.selectOption('#create select[name=variant]', variant);
  await page.fill('#create input[name=minutes]', String(minutes));
  await page.selectOption('#create select[name=color]', color);
  if (rated) await page.check('#create input[name=rated]');
  await page.click('#create button[type=submit]');
  await page.waitForSelector('#board-code', { timeout: WAIT });
  const code = await page.textContent('#board-code');
  const id = page.url().split('#/game/')[1];
  return { id, code };
}

async function joinByCode(page, code) {
  await page.fill('#join input[name=code]', code);
  await page.click('#join button[type=submit]');
  await page.waitForSelector('#board svg', { timeout: WAIT });
}

const plies = (page) => page.evaluate(() => {
  const g = window.frontier.games.get(location.hash.split('/')[2]);
  return g ? g.moves.length : -1;
});

async function waitPlies(page, n) {
  await page.waitForFunction((n) => {
    const g = window.frontier.games.get(location.hash.split('/')[2]);
    return g && g.moves.length >= n;
  }, n, { timeout: WAIT });
}

/** Plays `uci` by clicking its two squares, and waits until both pages show it. */
async function clickMove(mover, other, uci) {
  const n = await plies(mover);
  await mover.click(`[data-square="${uci.slice(0, 2)}"]`);
  await mover.click(`[data-square="${uci.slice(2, 4)}"]`);
  try {
    await waitPlies(mover, n + 1);
    await waitPlies(other, n + 1);
  } catch (e) {
    await shot(mover, `failed-${uci}-mover`);
    await shot(other, `failed-${uci}-other`);
    throw new Error(`${uci} was not played: ${e.message}`);
  }
}

/** Where an element is on screen (the board may be redrawn meanwhile: try again). */
async function boxOf(page, selector) {
  for (let i = 0; i < 50; i++) {
    const box = await page.locator(selector).boundingBox().catch(() => null);
    if (box) return box;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${selector} is not on screen`);
}

const gameState = (page) => page.evaluate(() => {
  const g = window.frontier.games.get(location.hash.split('/')[2]);
  return JSON.parse(JSON.stringify(g));
});

/**
 * What `page` shows as pieces: {square: {piece, hidden}} — the 2D board's DOM, or the 3D
 * board's scene where the player chose 3D.
 */
const shownPieces = (page) => page.evaluate(() => {
  const scene = window.frontier.scene3d();
  if (scene) return Object.fromEntries(Object.entries(scene.pieces).map(([sq, p]) => [sq, { piece: p.piece, hidden: p.hidden }]));
  return Object.fromEntries([...document.querySelectorAll('[data-piece]')].map((e) => [e.dataset.on, { piece: e.dataset.piece, hidden: !!e.dataset.hidden }]));
});

const APPARENT = (sq) => {
  const r = sq[1];
  if (r === '2' || r === '7') return 'p';
  return 'rnbqkbnr'['abcdefgh'.indexOf(sq[0])];
};

/**
 * The client shows no identity it was not sent: every hidden piece it draws is drawn as
 * its apparent role, the captured identities it shows are exactly those its frames
 * carried, and its state's identities equal the frames'.
 */
async function checkNoUnsentIdentity(p, gameId) {
  const frames = p.received.filter((f) => f.game_id === gameId);
  const sent = [];
  for (const f of frames) {
    if (f.type === 'game') sent.splice(0, sent.length, ...f.game.captured_identities.map((c) => `${c.square}:${c.role}`));
    if (f.type === 'event' && f.event.captured_identity) {
      const key = `${f.event.captured.square}:${f.event.captured_identity}`;
      if (!sent.includes(key)) sent.push(key);
    }
  }
  const state = await gameState(p.page);
  assert.deepEqual(state.capturedIdentities.map((c) => `${c.square}:${c.role}`).sort(), sent.sort());
  const shown = await p.page.evaluate(() => [...document.querySelectorAll('.cid')].map((e) => `${e.dataset.square}:${e.dataset.role}`));
  assert.deepEqual(shown.sort(), sent.sort());
  for (const [sq, { piece, hidden }] of Object.entries(await shownPieces(p.page))) {
    if (hidden) assert.equal(piece[1], APPARENT(sq), `hidden piece on ${sq} drawn as ${piece}`);
  }
  // Every revealed identity on the board came from a reveal the frames carried (or the
  // position a frame sent).
  const lastFen = state.fen;
  const frameFens = frames.flatMap((f) => (f.type === 'game' ? [f.game.fen] : f.event && f.event.fen ? [f.event.fen] : []));
  assert.ok(frameFens.includes(lastFen), 'the board shows a position the server sent');
  return sent;
}

async function shot(page, name) {
  await page.screenshot({ path: `${SHOTS}${name}.png` });
}

test('enter, and the language switch shows Italian', { skip: SKIP || false }, async () => {
  const { context, page } = await player();
  await shot(page, '01-enter');
  await page.selectOption('#lang', 'it');
  await page.waitForSelector('text=Gioca come ospite');
  assert.equal(await page.textContent('#guest'), 'Gioca come ospite');
  assert.equal(await page.evaluate(() => document.documentElement.lang), 'it');
  await enterAsGuest(page);
  await page.waitForSelector('text=Scacchiera privata');
  await shot(page, '02-lobby-italian');
  // The choice is kept across a reload.
  await page.reload();
  await page.waitForSelector('text=Scacchiera privata');
  await context.close();
});

test('a private hidden game by code, to checkmate through clicks: reveals drawn, captured identities to the capturer only, a reload resumes, refused moves recovered', { skip: SKIP || false }, async () => {
  const white = await player();
  const black = await player();
  await enterAsGuest(white.page);
  await enterAsGuest(black.page);
  const { id, code } = await createBoard(white.page, { variant: 'hidden' });
  await shot(white.page, '03-board-waiting');
  // The code stays on screen across a reload while the board waits.
  await white.page.reload();
  await white.page.waitForSelector('#board-code', { timeout: WAIT });
  assert.equal(await white.page.textContent('#board-code'), code);
  assert.match(await white.page.inputValue('#invite'), new RegExp(`/join/${code}$`));
  await joinByCode(black.page, code);
  await white.page.waitForFunction(() => [...window.frontier.games.values()].some((g) => g.status === 'playing'), null, { timeout: WAIT });
  // A spectator watches by the game's link.
  const watcher = await player();
  await enterAsGuest(watcher.page);
  await watcher.page.goto(`${base}/#/game/${id}`);
  await watcher.page.waitForSelector('#board svg', { timeout: WAIT });
  assert.match(await watcher.page.textContent('.meta'), /watching/);
  // Every piece but the kings is hidden, drawn as its apparent role with a mark.
  const start = await shownPieces(white.page);
  assert.equal(Object.values(start).filter((p) => p.hidden).length, 30);
  assert.equal(await white.page.locator('[data-hidden] .hidden-mark').count(), 30);
  assert.equal(await black.page.evaluate(() => window.frontier.board.opts.orientation), 'black');

  // 1. e4 e5 2. Bc4 (f1 is a bishop) Qh4 (d8 is a queen)
  const line = [
    ['e2e4', 'p'], ['e7e5', 'p'], ['f1c4', 'b'], ['d8h4', 'q'],
  ];
  for (const [i, [uci, role]] of line.entries()) {
    const [mover, other] = i % 2 === 0 ? [white, black] : [black, white];
    await clickMove(mover.page, other.page, uci);
    for (const p of [white, black]) {
      const pieces = await shownPieces(p.page);
      // The reveal is drawn: the piece stands revealed as its true role.
      assert.deepEqual(pieces[uci.slice(2, 4)], { piece: (i % 2 === 0 ? 'w' : 'b') + role, hidden: false }, uci);
      assert.equal(await p.page.locator(`td[data-ply="${i + 1}"] .reveal`).count(), 1, `reveal of ${uci} in the move list`);
    }
  }
  await shot(white.page, '04-hidden-game');

  // An illegal drag is refused by the client itself; nothing is sent, nothing changes.
  const before = await gameState(white.page);
  const box = await boxOf(white.page, '[data-square="e1"]');
  const to = await boxOf(white.page, '[data-square="e3"]');
  await white.page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await white.page.mouse.down();
  await white.page.mouse.move(to.x + to.width / 2, to.y + to.height / 2, { steps: 5 });
  await white.page.mouse.up();
  await white.page.waitForSelector('#notice:not([hidden])');
  assert.equal((await gameState(white.page)).version, before.version);
  // A forged move (an illegal one sent as a broken screen would) and a stale one (sent
  // for a version that is gone) are refused by the server; the client shows why and
  // reloads the server's state.
  await white.page.evaluate(() => window.frontier.debugMove('e1e3'));
  await white.page.waitForFunction(() => document.querySelector('#notice')?.textContent.includes('server refused'), null, { timeout: WAIT });
  await white.page.evaluate((v) => window.frontier.debugMove('b1c3', v - 1), before.version);
  await white.page.waitForFunction(() => document.querySelector('#notice')?.textContent.includes('moved on'), null, { timeout: WAIT });
  await shot(white.page, '05-refused-move');
  const afterRefusal = await gameState(white.page);
  assert.equal(afterRefusal.version, before.version);
  assert.equal(afterRefusal.fen, before.fen);

  // 3. Bxf7+ takes a hidden pawn: White learns it, Black does not.
  await clickMove(white.page, black.page, 'c4f7');
  await white.page.waitForSelector('.cid[data-square="f7"][data-role="pawn"]', { timeout: WAIT });
  assert.equal(await black.page.locator('.cid').count(), 0);
  assert.equal(await white.page.locator('.cap-hidden').count(), 1);

  // A reload mid-game resumes it: same position, same moves, same private knowledge.
  const beforeReload = await gameState(white.page);
  await white.page.reload();
  await white.page.waitForFunction((v) => {
    const g = window.frontier.games.get(location.hash.split('/')[2]);
    return g && g.version >= v;
  }, beforeReload.version, { timeout: WAIT });
  const resumed = await gameState(white.page);
  assert.equal(resumed.fen, beforeReload.fen);
  assert.deepEqual(resumed.moves, beforeReload.moves);
  assert.deepEqual(resumed.capturedIdentities, beforeReload.capturedIdentities);
  await white.page.waitForSelector('.cid[data-square="f7"]');

  // A dropped connection: Black's socket closes, White moves meanwhile, and Black
  // reconnects (with backoff) and resumes from the last version it saw.
  await clickMove(black.page, white.page, 'e8f7');
  await black.page.evaluate(() => window.frontier.conn.drop());
  const seen = await plies(white.page);
  await white.page.click('[data-square="h2"]');
  await white.page.click('[data-square="h3"]');
  await waitPlies(white.page, seen + 1);
  await black.page.waitForFunction(() => window.frontier.status === 'online', null, { timeout: WAIT });
  await waitPlies(black.page, seen + 1);
  assert.deepEqual((await gameState(black.page)).fen, (await gameState(white.page)).fen);
  await clickMove(black.page, white.page, 'f8c5');
  await clickMove(white.page, black.page, 'a2a3');
  // 6... Qxf2# takes a hidden pawn: Black learns it, White does not.
  await clickMove(black.page, white.page, 'h4f2');
  for (const p of [white, black]) {
    await p.page.waitForSelector('#result', { timeout: WAIT });
    assert.match(await p.page.textContent('#result-detail'), /Black wins — checkmate/);
  }
  // Each player reads the result as theirs; a spectator reads it plainly.
  assert.match(await white.page.textContent('#result-title'), /^You lost — checkmate$/);
  assert.match(await black.page.textContent('#result-title'), /^You won — checkmate$/);
  assert.equal(await black.page.locator('.cid[data-square="f2"][data-role="pawn"]').count(), 1);
  assert.equal(await white.page.locator('.cid[data-square="f2"]').count(), 0);
  assert.equal(await black.page.locator('.cid[data-square="f7"]').count(), 0);
  await watcher.page.waitForSelector('#result', { timeout: WAIT });
  assert.match(await watcher.page.textContent('#result-title'), /^Black wins — checkmate$/);
  assert.deepEqual(await checkNoUnsentIdentity(watcher, id), []);
  assert.equal(await watcher.page.locator('.cid').count(), 0);
  assert.equal(await watcher.page.locator('.cap-hidden').count(), 2);
  await watcher.context.close();
  const whiteSent = await checkNoUnsentIdentity(white, id);
  const blackSent = await checkNoUnsentIdentity(black, id);
  assert.deepEqual(whiteSent, ['f7:pawn']);
  assert.deepEqual(blackSent, ['f2:pawn']);
  // The result shows the layout, and the browser checks it against the commitment.
  await white.page.click('#verify');
  await white.page.waitForSelector('#verify-result.ok', { timeout: WAIT });
  assert.equal(await white.page.locator('.lay').count(), 30);
  assert.equal(await white.page.locator('.layout-board .lay[data-square="b1"][data-layout="wq"]').count(), 1);
  // The layout on the game's own board: every piece still hidden is turned over where it
  // stands (the fixed layout: a1 a pawn, b1 the queen, h8 a pawn, a7 a knight).
  await white.page.waitForSelector('#board [data-unveiled]', { timeout: WAIT });
  assert.equal(await white.page.locator('#board [data-hidden]').count(), 0);
  const unveiled = await white.page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#board [data-unveiled]')].map((e) => [e.dataset.on, e.dataset.piece])));
  assert.equal(unveiled.a1, 'wp');
  assert.equal(unveiled.b1, 'wq');
  assert.equal(unveiled.h8, 'bp');
  assert.equal(unveiled.a7, 'bn');
  assert.equal(unveiled.e4, undefined, 'a piece revealed in play is not marked');
  await shot(white.page, '06-result-verified');
  await shot(black.page, '07-result-black');
  await white.page.click('#close-result');
  await shot(white.page, '07-layout-on-board');
  await white.context.close();
  await black.context.close();
});

test('a finished rated game shows its rating change in the dashboard', { skip: SKIP || false }, async () => {
  const suffix = Math.random().toString(36).slice(2, 7);
  const alice = await player();
  const bob = await player();
  await register(alice.page, `alice${suffix}`);
  await register(bob.page, `bob${suffix}`);
  await createBoard(alice.page, { variant: 'standard', color: 'white', rated: true });
  // Bob follows the invite link.
  await bob.page.goto(await alice.page.inputValue('#invite'));
  await bob.page.waitForSelector('#board svg', { timeout: WAIT });
  await alice.page.waitForFunction(() => [...window.frontier.games.values()].some((g) => g.status === 'playing'), null, { timeout: WAIT });
  // Fool's mate: Black wins.
  await clickMove(alice.page, bob.page, 'f2f3');
  await clickMove(bob.page, alice.page, 'e7e5');
  await clickMove(alice.page, bob.page, 'g2g4');
  await clickMove(bob.page, alice.page, 'd8h4');
  await bob.page.waitForSelector('#result', { timeout: WAIT });
  await bob.page.click('#close-result');
  await bob.page.click('a[data-nav=dashboard]');
  // The rating service records the game a moment after its end: reload until it shows.
  const deadline = Date.now() + WAIT;
  let change = '';
  while (Date.now() < deadline) {
    await bob.page.waitForSelector('#main.dashboard table', { timeout: WAIT });
    change = (await bob.page.locator('.games td.change').first().textContent().catch(() => '')) || '';
    if (change.startsWith('+')) break;
    await new Promise((r) => setTimeout(r, 300));
    await bob.page.reload();
  }
  assert.match(change, /^\+\d+$/);
  assert.match(await bob.page.textContent('.rating[data-variant="standard"]'), /^1[6-7]\d\d\?$/);
  await bob.page.waitForSelector('.chart');
  await shot(bob.page, '08-dashboard');
  await bob.page.click('.games a');
  await bob.page.waitForSelector('#main.record #board svg');
  assert.match(await bob.page.textContent('.movetext'), /Qh4#/);
  await shot(bob.page, '09-game-record');
  await bob.page.goto(base + '/#/leaderboard');
  await bob.page.waitForSelector('#main.leaderboard table');
  await shot(bob.page, '10-leaderboard');
  await alice.context.close();
  await bob.context.close();
});

test('a phone-sized screen has no horizontal scroll; dark mode and a board theme', { skip: SKIP || false }, async () => {
  const a = await player({ width: 390, height: 844 });
  const b = await player();
  await enterAsGuest(a.page);
  await enterAsGuest(b.page);
  const scroll = () => a.page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok((await scroll()) <= 390, `lobby is ${await scroll()} px wide`);
  const { code } = await createBoard(a.page, { variant: 'atomic' });
  await joinByCode(b.page, code);
  await a.page.waitForFunction(() => [...window.frontier.games.values()].some((g) => g.status === 'playing'), null, { timeout: WAIT });
  await a.page.click('#dark');
  await a.page.selectOption('#theme', 'brown');
  assert.equal(await a.page.evaluate(() => document.documentElement.classList.contains('dark')), true);
  assert.ok((await scroll()) <= 390, `game screen is ${await scroll()} px wide`);
  // Moves can be typed.
  await a.page.fill('#move-input input', 'e4');
  await a.page.press('#move-input input', 'Enter');
  await waitPlies(b.page, 1);
  await shot(a.page, '11-phone-dark');
  // Atomic: a capture explodes, drawn on both boards as it happens.
  await clickMove(b.page, a.page, 'd7d5');
  await clickMove(a.page, b.page, 'e4d5');
  for (const p of [a, b]) {
    await p.page.waitForSelector('[data-boom="d5"]', { timeout: WAIT });
    const pieces = await shownPieces(p.page);
    assert.equal(pieces.d5, undefined);
    assert.equal(pieces.e4, undefined);
  }
  await shot(b.page, '12-atomic-explosion');
  await a.context.close();
  await b.context.close();
});

test('a hidden piece that reveals as a pawn on the last rank pauses for the promotion choice', { skip: SKIP || false }, async () => {
  const white = await player();
  const black = await player();
  await enterAsGuest(white.page);
  await enterAsGuest(black.page);
  const { code } = await createBoard(white.page, { variant: 'hidden' });
  await joinByCode(black.page, code);
  await white.page.waitForFunction(() => [...window.frontier.games.values()].some((g) => g.status === 'playing'), null, { timeout: WAIT });
  // a2 and a7 are knights: they leave the a-file; the a1 "rook" is a pawn.
  await clickMove(white.page, black.page, 'a2a4');
  await clickMove(black.page, white.page, 'a7a5');
  await clickMove(white.page, black.page, 'a4c5');
  await clickMove(black.page, white.page, 'a5c6');
  await clickMove(white.page, black.page, 'a1a8');
  await white.page.waitForSelector('#promotion', { timeout: WAIT });
  assert.match(await white.page.textContent('#promo-title'), /pawn on the last rank/);
  assert.equal(await black.page.locator('#promotion').count(), 0);
  assert.match(await black.page.textContent('#turn'), /choose its promotion/);
  await shot(white.page, '13-promotion-on-reveal');
  // The capture of the hidden a8 rook is White's to know.
  await white.page.waitForSelector('.cid[data-square="a8"][data-role="rook"]');
  await white.page.click('[data-promote="n"]');
  for (const p of [white, black]) {
    await p.page.waitForFunction(() => {
      const g = window.frontier.games.get(location.hash.split('/')[2]);
      return g && !g.pendingPromotion && g.turn === 'black';
    }, null, { timeout: WAIT });
    assert.deepEqual((await shownPieces(p.page)).a8, { piece: 'wn', hidden: false });
  }
  assert.equal((await gameState(black.page)).moves[4].uci, 'a1a8n');
  await white.context.close();
  await black.context.close();
});

test('clocks tick from the server readings and warn on low time', { skip: SKIP || false }, async () => {
  const white = await player();
  const black = await player();
  await enterAsGuest(white.page);
  await enterAsGuest(black.page);
  const { code } = await createBoard(white.page, { variant: 'standard', minutes: 1 });
  await joinByCode(black.page, code);
  await white.page.waitForFunction(() => [...window.frontier.games.values()].some((g) => g.status === 'playing'), null, { timeout: WAIT });
  // The first move of each side is not timed; then White's clock runs.
  await clickMove(white.page, black.page, 'e2e4');
  await clickMove(black.page, white.page, 'e7e5');
  const clock = black.page.locator('[data-clock="white"]');
  await black.page.waitForSelector('[data-clock="white"].running.low', { timeout: WAIT });
  const first = await clock.textContent();
  await black.page.waitForFunction((t) => document.querySelector('[data-clock="white"]').textContent !== t, first, { timeout: WAIT });
  assert.equal(await black.page.locator('[data-clock="black"].running').count(), 0);
  await shot(black.page, '14-clocks');
  // A draw offer, declined; then a resignation.
  await black.page.click('[data-act="offer_draw"]');
  await white.page.waitForSelector('.draw-offer', { timeout: WAIT });
  assert.match(await white.page.textContent('.draw-offer'), /Black offers a draw/);
  await white.page.click('[data-act="decline_draw"]');
  await black.page.waitForSelector('[data-act="offer_draw"]', { timeout: WAIT });
  // White's own page drops the offer when its client hears the refusal, which may come
  // after Black's (a loaded machine): wait for it rather than look once.
  await white.page.waitForSelector('.draw-offer', { state: 'detached', timeout: WAIT });
  assert.equal(await white.page.locator('.draw-offer').count(), 0);
  await white.page.click('[data-act="resign"]');
  await confirmInPage(white.page);
  await black.page.waitForSelector('#result', { timeout: WAIT });
  assert.match(await black.page.textContent('#result-title'), /You won — resignation/);
  assert.match(await black.page.textContent('#result-detail'), /Black wins — resignation/);
  await white.context.close();
  await black.context.close();
});

/** Skips the running test, loudly, when the server does not know a message type yet. */
function skipIfNotLanded(t, errorText, what) {
  if (/unknown_type/.test(errorText || '')) {
    const why = `SKIPPED: the server has no ${what} yet (unknown_type): this scenario runs once it lands`;
    console.log(`\n*** ${why} ***\n`);
    t.skip(why);
    return true;
  }
  return false;
}

test('a lobby choice made on a form the lobby has since drawn again stands', { skip: SKIP || false }, async () => {
  // The race behind a CI failure, made to happen every time: the lobby is drawn again (a
  // `status` arriving) just before a choice lands on the form it replaced; the next field
  // is then picked on the new form. That second pick once copied the new form's stale
  // variant over the choice, and "atomic against the computer" started a standard game.
  const me = await player();
  await enterAsGuest(me.page);
  const shown = await me.page.evaluate(() => {
    const before = document.querySelector('#computer select[name=variant]');
    document.querySelector('#dark').click(); // the lobby drawn again; `before` is now detached
    before.value = 'atomic';
    before.dispatchEvent(new Event('change', { bubbles: true }));
    const color = document.querySelector('#computer select[name=color]');
    color.value = 'black';
    color.dispatchEvent(new Event('change', { bubbles: true }));
    document.querySelector('#dark').click(); // and drawn again from the remembered choices
    const f = document.querySelector('#computer');
    return { variant: f.variant.value, color: f.color.value };
  });
  assert.deepEqual(shown, { variant: 'atomic', color: 'black' });
  await me.context.close();
});

test('a form drawn again before a choice landed sends the choice, not its own stale fields', { skip: SKIP || false }, async () => {
  // The other half of that race (a CI failure: hidden 10+0 picked, standard 10+0 sought):
  // the lobby is drawn again, then the pick lands on the form it replaced; the form on
  // screen, drawn before the pick, still shows the old variant when it is submitted.
  const me = await player();
  await enterAsGuest(me.page);
  const onScreen = await me.page.evaluate(() => {
    const before = document.querySelector('#seek select[name=variant]');
    document.querySelector('#dark').click(); // drawn again: `before` is detached
    before.value = 'hidden';
    before.dispatchEvent(new Event('change', { bubbles: true }));
    const pool = document.querySelector('#seek select[name=pool]');
    pool.value = '10+0';
    pool.dispatchEvent(new Event('change', { bubbles: true }));
    // Read in the same task: a later redraw (a status change) would draw the choice.
    return document.querySelector('#seek select[name=variant]').value;
  });
  assert.equal(onScreen, 'standard', 'the form on screen is stale');
  await me.page.click('#seek button[type=submit]');
  await me.page.waitForSelector('.seeking', { timeout: WAIT });
  const seeking = me.received.find((f) => f.type === 'seeking');
  assert.deepEqual(seeking.pools, [{ variant: 'hidden', clock: { minutes: 10, increment: 0 }, rated: false }]);
  await me.page.click('#cancel-seek');
  await me.page.waitForSelector('.seeking', { state: 'detached', timeout: WAIT });
  await me.context.close();
});

test('atomic against the computer: an explosion, and an undo', { skip: SKIP || false }, async (t) => {
  const me = await player();
  await enterAsGuest(me.page);
  await me.page.selectOption('#computer select[name=variant]', 'atomic');
  await me.page.selectOption('#computer select[name=color]', 'white');
  // What the page holds now, to say which step lost a choice if one is lost: the recorded
  // choice, the form on screen, whether that form records its changes, the redraws.
  const lobby = () => me.page.evaluate(() => {
    const form = document.querySelector('#computer');
    return {
      recorded: window.frontier.choices.computer.variant,
      shown: form?.variant.value,
      bound: typeof form?.onchange === 'function',
      renders: window.frontier.renders,
    };
  });
  const picked = await lobby();
  assert.equal(picked.recorded, 'atomic', `the choice of atomic was not recorded: ${JSON.stringify(picked)}`);
  // The lobby is drawn again whenever what it shows changes (a connection's status, a
  // seek, here dark mode twice): the choices stand. (They once fell back to standard when
  // the status of a fresh connection came just after they were made.)
  await me.page.click('#dark');
  await me.page.click('#dark');
  const redrawn = await lobby();
  assert.equal(redrawn.shown, 'atomic', `after the redraws: ${JSON.stringify(redrawn)}, after the choice: ${JSON.stringify(picked)}`);
  await me.page.click('#computer button[type=submit]');
  const started = await Promise.race([
    me.page.waitForSelector('#board svg', { timeout: WAIT }).then(() => ''),
    me.page.waitForFunction(() => document.querySelector('#computer-error')?.textContent, null, { timeout: WAIT }).then((h) => h.jsonValue()),
  ]);
  if (skipIfNotLanded(t, started, 'play_computer')) return me.context.close();
  assert.equal(started, '');
  await me.page.waitForSelector('.badge.bot');
  const myTurn = () => me.page.waitForFunction(() => {
    const g = window.frontier.games.get(location.hash.split('/')[2]);
    return g && (g.turn === g.seat || g.status === 'finished');
  }, null, { timeout: WAIT });
  // Undo: one move, the computer's reply, then both taken back at once. "Take back" is
  // offered only when there is a move of mine to take back, on my turn.
  await myTurn();
  const start = await gameState(me.page);
  await me.page.waitForSelector('[data-act="resign"]', { timeout: WAIT });
  assert.equal(await me.page.locator('[data-act="undo"]').count(), 0, 'no take back before my first move');
  await me.page.click('[data-square="g1"]');
  await me.page.click('[data-square="f3"]');
  await waitPlies(me.page, 2);
  await myTurn();
  await me.page.click('[data-act="undo"]');
  await me.page.waitForFunction(() => window.frontier.games.get(location.hash.split('/')[2]).moves.length === 0, null, { timeout: WAIT });
  assert.equal((await gameState(me.page)).fen, start.fen);
  await me.page.waitForSelector('[data-act="undo"]', { state: 'detached', timeout: WAIT });
  assert.equal(await me.page.locator('[data-act="undo"]').count(), 0, 'nothing left to take back');
  // Every explosion drawn on the board is noted as it appears.
  await me.page.evaluate(() => {
    window.__booms = [];
    new MutationObserver(() => {
      for (const b of document.querySelectorAll('[data-boom]')) window.__booms.push(b.dataset.boom);
    }).observe(document.body, { childList: true, subtree: true });
  });
  // Play (a capture whenever there is one) until something explodes, on either side.
  for (let ply = 0; ply < 40; ply++) {
    if ((await me.page.evaluate(() => window.__booms.length)) > 0) break;
    await myTurn();
    const choice = await me.page.evaluate(async () => {
      const chess = await import('/app/js/chess.js');
      const g = window.frontier.games.get(location.hash.split('/')[2]);
      if (g.status === 'finished') return null;
      const pos = chess.parseFen(g.fen, 'atomic');
      const moves = chess.legalMoves(pos);
      const m = moves.find((x) => pos.board[x.to] && !x.promotion) || moves.find((x) => !x.promotion && pos.board[x.from].role !== 'k') || moves[0];
      return m && chess.uci(m);
    });
    if (!choice) break;
    const n = await plies(me.page);
    await me.page.click(`[data-square="${choice.slice(0, 2)}"]`);
    await me.page.click(`[data-square="${choice.slice(2, 4)}"]`);
    await waitPlies(me.page, n + 1);
  }
  const booms = await me.page.evaluate(() => window.__booms);
  if (booms.length === 0) {
    // Say why (seen on loaded CI machines, when the lobby dropped the choice of atomic).
    const g = await gameState(me.page);
    const id = await me.page.evaluate(() => location.hash.split('/')[2]);
    const kinds = me.received.filter((f) => f.game_id === id).map((f) => `${f.type}${f.version ? ` v${f.version}` : ''}${f.event ? ` ${f.event.kind}` : ''}`);
    assert.fail(`no explosion was drawn in 40 plies; status ${g.status}, outcome ${JSON.stringify(g.outcome)}, moves ${g.moves.map((m) => `${m.uci}${m.captured ? 'x' : ''}`).join(' ')}; frames ${kinds.slice(-60).join(', ')}`);
  }
  const captures = (await gameState(me.page)).moves.filter((m) => m.captured).map((m) => m.uci.slice(2, 4));
  assert.ok(booms.some((sq) => captures.includes(sq)), `explosions ${booms} at no capture square ${captures}`);
  await shot(me.page, '15-computer-atomic');
  await me.context.close();
});

test('quick match: the seek shows its wait and cancels; a lone seek falls back to a labelled bot that plays', { skip: SKIP || false }, async () => {
  const me = await player();
  await enterAsGuest(me.page);
  // hidden 10+0 has no bot on the test server: the seek stands until cancelled.
  await chooseSeek(me.page, 'hidden', '10+0');
  await me.page.click('#seek button[type=submit]');
  await me.page.waitForFunction(() => /\d+ s/.test(document.querySelector('#seek-wait')?.textContent || ''), null, { timeout: WAIT });
  const first = me.received.find((f) => f.type === 'seeking');
  assert.deepEqual(first.pools, [{ variant: 'hidden', clock: { minutes: 10, increment: 0 }, rated: false }]);
  await shot(me.page, '16-quick-match-seeking');
  // While the seek stands, "find an opponent" cannot be clicked again (cancel instead).
  assert.ok(await me.page.isDisabled('#seek button[type=submit]'), 'find an opponent is disabled while seeking');
  await me.page.click('#seek button[type=submit]', { force: true });
  await me.page.click('#cancel-seek');
  await me.page.waitForSelector('.seeking', { state: 'detached', timeout: WAIT });
  assert.equal(me.received.filter((f) => f.type === 'seeking').length, 1, 'one seek, however many clicks');
  assert.ok(await me.page.isEnabled('#seek button[type=submit]'), 'offered again once the seek is cancelled');
  assert.ok(me.received.some((f) => f.type === 'seek_cancelled' && f.cancelled === true), 'the server cancelled it');
  assert.equal(me.received.filter((f) => f.type === 'matched').length, 0);

  // standard 5+0 casual: nobody comes, and after 2 s a bot is offered.
  await chooseSeek(me.page, 'standard', '5+0');
  await me.page.click('#seek button[type=submit]');
  await me.page.waitForSelector('#board svg', { timeout: WAIT });
  const matched = me.received.find((f) => f.type === 'matched');
  assert.equal(matched.opponent.bot, true, 'labelled a bot');
  assert.equal(matched.rated, false, 'casual, said before the game starts');
  assert.deepEqual(matched.pool, { variant: 'standard', clock: { minutes: 5, increment: 0 }, rated: false });
  assert.equal(await me.page.evaluate(() => location.hash), `#/game/${matched.game_id}`);
  await me.page.waitForSelector('.badge.bot', { timeout: WAIT });
  // The bot plays: at once with White, or after my first move.
  const botColor = matched.color === 'white' ? 'black' : 'white';
  await me.page.waitForFunction((id) => window.frontier.games.get(id)?.status === 'playing', matched.game_id, { timeout: WAIT });
  if (matched.color === 'white') {
    await me.page.click('[data-square="e2"]');
    await me.page.click('[data-square="e4"]');
  }
  await me.page.waitForFunction((c) => {
    const g = window.frontier.games.get(location.hash.split('/')[2]);
    return g && g.moves.length >= (c === 'white' ? 1 : 2);
  }, botColor, { timeout: WAIT });
  assert.ok(
    me.received.some((f) => f.type === 'event' && f.game_id === matched.game_id && f.event.kind === 'move' && f.event.color === botColor),
    'the bot moved',
  );
  await shot(me.page, '17-quick-match-bot');
  await me.context.close();
});

test('rematch: offered from the result dialog, accepted by the opponent, the new game opens with colours swapped', { skip: SKIP || false }, async () => {
  const alice = await player();
  const bob = await player();
  await enterAsGuest(alice.page);
  await enterAsGuest(bob.page);
  const { id, code } = await createBoard(alice.page, { variant: 'standard', color: 'white' });
  await joinByCode(bob.page, code);
  await alice.page.waitForFunction(() => [...window.frontier.games.values()].some((g) => g.status === 'playing'), null, { timeout: WAIT });
  // Fool's mate: Black wins.
  await clickMove(alice.page, bob.page, 'f2f3');
  await clickMove(bob.page, alice.page, 'e7e5');
  await clickMove(alice.page, bob.page, 'g2g4');
  await clickMove(bob.page, alice.page, 'd8h4');
  for (const p of [alice.page, bob.page]) await p.waitForSelector('#result [data-rematch=offer_rematch]', { timeout: WAIT });
  await bob.page.click('#result [data-rematch=offer_rematch]');
  // The offerer sees it stand; the opponent sees it come in, with accept and decline.
  await bob.page.waitForSelector('#result [data-rematch=decline_rematch]', { timeout: WAIT });
  await alice.page.waitForSelector('#result [data-rematch=accept_rematch]', { timeout: WAIT });
  assert.ok(await alice.page.isVisible('#result [data-rematch=decline_rematch]'));
  await shot(alice.page, '17-rematch-offered');
  await alice.page.click('#result [data-rematch=accept_rematch]');
  // Both open the new game: the same settings, colours swapped.
  const opened = async (p) => {
    await p.waitForFunction((old) => {
      const now = location.hash.split('/')[2];
      const g = window.frontier.games.get(now);
      return now && now !== old && g && g.status === 'playing';
    }, id, { timeout: WAIT });
    return p.evaluate(() => {
      const g = window.frontier.games.get(location.hash.split('/')[2]);
      return { id: g.id, seat: g.seat, variant: g.variant, rated: g.rated, clock: g.clock };
    });
  };
  const [a, b] = [await opened(alice.page), await opened(bob.page)];
  assert.equal(a.id, b.id, 'one new game for both');
  assert.equal(a.seat, 'black', 'White of the last game plays Black');
  assert.equal(b.seat, 'white');
  assert.equal(a.variant, 'standard');
  assert.equal(a.rated, false);
  await bob.page.waitForSelector('#board svg', { timeout: WAIT });
  await clickMove(bob.page, alice.page, 'e2e4');
  await shot(bob.page, '18-rematch-started');
  await alice.context.close();
  await bob.context.close();
});

/** Notes every animation the page draws (`data-anim`: slide, capture, reveal, explode). */
const watchAnims = (page) => page.evaluate(() => {
  window.__anims = [];
  new MutationObserver(() => {
    for (const e of document.querySelectorAll('[data-anim]')) if (!window.__anims.includes(e.dataset.anim)) window.__anims.push(e.dataset.anim);
  }).observe(document.body, { childList: true, subtree: true });
});
const anims = (page) => page.evaluate(() => window.__anims.slice().sort());
const sounds = (page) => page.evaluate(() => window.frontier.sounds.slice());
const waitSound = (page, name) => page.waitForFunction((n) => window.frontier.sounds.includes(n), name, { timeout: WAIT });

/** A standard (or other) game between two guests, started; returns both and the game id. */
async function twoPlayers({ variant = 'standard', minutes = 0, white: wo = {}, black: bo = {} } = {}) {
  const white = await player(undefined, wo);
  const black = await player(undefined, bo);
  await enterAsGuest(white.page);
  await enterAsGuest(black.page);
  const { id, code } = await createBoard(white.page, { variant, minutes });
  await joinByCode(black.page, code);
  await white.page.waitForFunction(() => [...window.frontier.games.values()].some((g) => g.status === 'playing'), null, { timeout: WAIT });
  return { white, black, id };
}

test('flip the board (button and f, kept per game); step through the live game with the arrows and the move list, new moves do not yank the view, back to the live position', { skip: SKIP || false }, async () => {
  const { white, black } = await twoPlayers();
  const w = white.page;
  const orientation = () => w.evaluate(() => window.frontier.board.opts.orientation);
  // a1 is drawn at the bottom left for White, at the top right once flipped.
  const a1 = async () => {
    const b = await boxOf(w, '[data-square="a1"]');
    const board = await boxOf(w, '#board');
    return { top: b.y < board.y + board.height / 2, left: b.x < board.x + board.width / 2 };
  };
  assert.equal(await orientation(), 'white');
  assert.deepEqual(await a1(), { top: false, left: true });
  await w.click('#flip');
  assert.equal(await orientation(), 'black');
  assert.deepEqual(await a1(), { top: true, left: false });
  assert.equal(await w.getAttribute('#flip', 'aria-pressed'), 'true');
  await shot(w, '19-flipped');
  // The key f flips back; and again; the flip stays through the game's moves.
  await w.keyboard.press('f');
  assert.equal(await orientation(), 'white');
  await w.keyboard.press('f');
  await clickMove(w, black.page, 'e2e4');
  await clickMove(black.page, w, 'e7e5');
  assert.equal(await orientation(), 'black', 'the flip is kept while the game goes on');
  await w.keyboard.press('f');
  await clickMove(w, black.page, 'g1f3');
  // ← steps back one ply: the knight stands on g1 again; the live game is untouched.
  await w.locator('body').focus();
  await w.keyboard.press('ArrowLeft');
  assert.deepEqual((await shownPieces(w)).g1, { piece: 'wn', hidden: false });
  assert.equal((await shownPieces(w)).f3, undefined);
  assert.equal(await w.locator('#back-live').count(), 1);
  assert.equal((await gameState(w)).moves.length, 3);
  // The move list is clickable: after 1. e4 only.
  await w.click('td[data-ply="1"]');
  let pieces = await shownPieces(w);
  assert.deepEqual(pieces.e4, { piece: 'wp', hidden: false });
  assert.deepEqual(pieces.e7, { piece: 'bp', hidden: false });
  assert.equal(pieces.e5, undefined);
  assert.equal(await w.locator('td.current[data-ply="1"]').count(), 1);
  // Black moves meanwhile: White's view stays where it is, and the control says there is more.
  await clickMove(black.page, w, 'b8c6');
  pieces = await shownPieces(w);
  assert.deepEqual(pieces.e7, { piece: 'bp', hidden: false }, 'the view was not yanked to the live position');
  await w.waitForSelector('#back-live.more');
  assert.match(await w.textContent('#back-live'), /Back to the live position — 1 new/);
  await shot(w, '20-stepped-back');
  // → one ply forward: after 1... e5.
  await w.keyboard.press('ArrowRight');
  pieces = await shownPieces(w);
  assert.deepEqual(pieces.e5, { piece: 'bp', hidden: false });
  assert.equal(pieces.e7, undefined);
  // Back to the live position.
  await w.click('#back-live');
  pieces = await shownPieces(w);
  assert.deepEqual(pieces.c6, { piece: 'bn', hidden: false });
  assert.deepEqual(pieces.f3, { piece: 'wn', hidden: false });
  assert.equal(await w.locator('#back-live').count(), 0);
  // And the game goes on from it.
  await clickMove(w, black.page, 'f1c4');
  await white.context.close();
  await black.context.close();
});

test('premove: queued during the opponent\'s turn and drawn, cancelled by Escape and a right click, never offered for an impossible move, played the instant the opponent moved (a recapture too)', { skip: SKIP || false }, async () => {
  const { white, black, id } = await twoPlayers();
  const w = white.page;
  const premove = () => w.evaluate((id) => window.frontier.premoves.get(id) || null, id);
  await clickMove(w, black.page, 'e2e4');
  // Black to move: White queues d2–d4.
  await w.click('[data-square="d2"]');
  await w.click('[data-square="d4"]');
  assert.deepEqual(await premove(), { from: 11, to: 27 });
  assert.equal(await w.locator('.sq.premove').count(), 2);
  assert.equal((await gameState(w)).moves.length, 1, 'nothing was sent');
  await shot(w, '21-premove');
  // A king cannot go e1–e3: not offered, the premove stands.
  await w.click('[data-square="e1"]');
  await w.click('[data-square="e3"]');
  assert.deepEqual(await premove(), { from: 11, to: 27 });
  // Escape cancels it; so does a right click.
  await w.keyboard.press('Escape');
  assert.equal(await premove(), null);
  assert.equal(await w.locator('.sq.premove').count(), 0);
  await w.click('[data-square="d2"]');
  await w.click('[data-square="d4"]');
  assert.ok(await premove());
  await w.click('[data-square="h5"]', { button: 'right' });
  assert.equal(await premove(), null);
  assert.equal(await w.locator('.sq.premove').count(), 0);
  // Queued again, and played as soon as Black has moved, with no click of White's.
  await w.click('[data-square="d2"]');
  await w.click('[data-square="d4"]');
  await clickMove(black.page, w, 'e7e5');
  await waitPlies(black.page, 3);
  assert.equal((await gameState(black.page)).moves[2].uci, 'd2d4');
  assert.equal(await w.locator('.sq.premove').count(), 0);
  // A recapture on a square one's own piece stands on: offered, and played after exd4.
  await w.click('[data-square="d1"]');
  await w.click('[data-square="d4"]');
  assert.deepEqual(await premove(), { from: 3, to: 27 });
  await clickMove(black.page, w, 'e5d4');
  await waitPlies(black.page, 5);
  assert.equal((await gameState(black.page)).moves[4].uci, 'd1d4');
  assert.deepEqual((await shownPieces(black.page)).d4, { piece: 'wq', hidden: false });
  await white.context.close();
  await black.context.close();
});

test('moves are animated (slide, capture, reveal, explosion; none for reduced motion) and sounded through the Web Audio API, with a remembered mute switch', { skip: SKIP || false }, async () => {
  // A hidden game on a 1-minute clock (21 s on the test server: low time comes at once).
  const { white, black } = await twoPlayers({ variant: 'hidden', minutes: 1, white: { audio: true }, black: { audio: true, reducedMotion: 'reduce' } });
  const [w, b] = [white.page, black.page];
  await waitSound(w, 'start');
  await watchAnims(w);
  await watchAnims(b);
  await clickMove(w, b, 'e2e4');
  await waitSound(b, 'move');
  await waitSound(b, 'reveal');
  await clickMove(b, w, 'e7e5');
  await clickMove(w, b, 'f1c4');
  await clickMove(b, w, 'd8h4');
  // White's clock runs below 20 s: the low-time warning, once.
  await waitSound(w, 'lowtime');
  // 3. Bxf7+: a capture, with check.
  await clickMove(w, b, 'c4f7');
  for (const p of [w, b]) {
    await waitSound(p, 'capture');
    await waitSound(p, 'check');
  }
  assert.deepEqual(await anims(w), ['capture', 'reveal', 'slide']);
  assert.deepEqual(await anims(b), [], 'nothing moves for a player who asked for reduced motion');
  const spied = await b.evaluate(() => window.__audio);
  assert.ok(spied.made >= 1 && spied.started >= 6, `the AudioContext was used: ${JSON.stringify(spied)}`);
  // Black mutes: the game's end sounds for White only; the choice survives a reload.
  await b.click('#mute');
  assert.equal(await b.getAttribute('#mute', 'aria-pressed'), 'true');
  const before = await b.evaluate(() => window.__audio.started);
  const blackSounds = (await sounds(b)).length;
  await w.click('[data-act="resign"]');
  await confirmInPage(w);
  await waitSound(w, 'end');
  await b.waitForSelector('#result', { timeout: WAIT });
  assert.equal((await sounds(b)).length, blackSounds);
  assert.equal(await b.evaluate(() => window.__audio.started), before);
  await b.reload();
  await b.waitForSelector('#mute[aria-pressed="true"]', { timeout: WAIT });
  assert.equal(await b.evaluate(() => localStorage.getItem('frontier.muted')), 'true');
  await white.context.close();
  await black.context.close();
  // Atomic: a capture explodes, with its own sound and animation.
  const atomic = await twoPlayers({ variant: 'atomic', white: { audio: true }, black: { audio: true } });
  await watchAnims(atomic.white.page);
  await clickMove(atomic.white.page, atomic.black.page, 'e2e4');
  await clickMove(atomic.black.page, atomic.white.page, 'd7d5');
  await clickMove(atomic.white.page, atomic.black.page, 'e4d5');
  for (const p of [atomic.white.page, atomic.black.page]) await waitSound(p, 'explosion');
  assert.ok((await anims(atomic.white.page)).includes('explode'));
  await shot(atomic.white.page, '22-explosion-animated');
  await atomic.white.context.close();
  await atomic.black.context.close();
});

test('seven board looks and seven piece sets, chosen mid-game from the settings panel: each draws the board differently, the hidden mark on every set, kept across a reload', { skip: SKIP || false }, async () => {
  const { white, black } = await twoPlayers({ variant: 'hidden' });
  const w = white.page;
  await clickMove(w, black.page, 'e2e4');
  await clickMove(black.page, w, 'e7e5');
  // Past the move's animation: the board stands still.
  await new Promise((r) => setTimeout(r, 1500));
  await w.click('#looks summary');
  // Each also as a small JPEG for docs/screenshots/ (copied from out/screenshots/docs/).
  mkdirSync(`${SHOTS}docs`, { recursive: true });
  const board = async (name) => {
    const img = (await w.locator('#board').screenshot({ path: `${SHOTS}${name}.png`, animations: 'disabled' })).toString('base64');
    await w.locator('#board').screenshot({ path: `${SHOTS}docs/${name}.jpg`, type: 'jpeg', quality: 70, animations: 'disabled' });
    return img;
  };
  const seen = [await board('board-green')];
  for (const look of ['felt', 'marble', 'sandstone', 'glacier', 'amber', 'tidepool', 'chamber']) {
    await w.selectOption('#board-look', look);
    await w.waitForSelector(`#board svg.look-${look}`);
    const img = await board(`board-${look}`);
    assert.ok(!seen.includes(img), `the ${look} look draws the board differently from every other`);
    seen.push(img);
    assert.equal(await w.evaluate(() => localStorage.getItem('frontier.theme')), JSON.stringify(look));
  }
  await w.selectOption('#board-look', 'marble');
  await w.waitForSelector('#board svg.look-marble');
  const sets = [await board('pieces-frontier')];
  for (const set of ['geometric', 'letters', 'emblem', 'outline', 'pixel', 'relief']) {
    await w.selectOption('#piece-set', set);
    await w.waitForSelector(`#board .piece.set-${set}`);
    const img = await board(`pieces-${set}`);
    assert.ok(!sets.includes(img), `the ${set} set draws the pieces differently from every other`);
    sets.push(img);
    // The hidden mark on every hidden piece of every set.
    assert.equal(await w.locator('#board [data-hidden] .hidden-mark').count(), 28, set);
  }
  await w.selectOption('#piece-set', 'frontier');
  await w.waitForSelector('#board .piece.set-frontier');
  assert.equal(await board('pieces-frontier-again'), sets[0], 'the first set draws as it did');
  // The game goes on in the chosen looks; the choice survives a reload.
  await w.selectOption('#piece-set', 'pixel');
  await clickMove(w, black.page, 'f1c4');
  await w.reload();
  await w.waitForSelector('#board .piece.set-pixel', { timeout: WAIT });
  assert.equal(await w.locator('#board svg.look-marble').count(), 1);
  assert.equal(await w.inputValue('#board-look'), 'marble');
  await shot(w, '23-marble-pixel');
  await white.context.close();
  await black.context.close();
});

// ---------------------------------------------------------------- the 3D board (issue 25)

const scene3d = (page) => page.evaluate(() => window.frontier.scene3d());

/** A screenshot of the board as it is on screen (the game screen may draw #board anew meanwhile). */
const boardShot = async (page, opts = {}) => page.screenshot({ clip: await boxOf(page, '#board'), ...opts });

/** Switches the game on `page` to the 3D board, and waits until it is drawn in its look. */
async function to3d(page) {
  await page.click('#view3d');
  await page.waitForFunction(() => {
    const s = window.frontier.scene3d();
    return s && s.look;
  }, null, { timeout: WAIT });
  assert.equal(await page.locator('#board canvas.board-3d').count(), 1);
  assert.equal(await page.locator('#board svg').count(), 0, 'the 2D board is gone');
}

/**
 * Where a player clicks square `name` on the 3D board: the camera's projection of it, once
 * no piece is on its way across the board (a move's animation over).
 */
async function point3d(page, name) {
  return (await page.waitForFunction((n) => !window.frontier.scene3d()?.animating && window.frontier.square3d(n), name, { timeout: WAIT })).jsonValue();
}

async function click3d(page, name) {
  const { x, y } = await point3d(page, name);
  await page.mouse.click(x, y);
}

/** Plays `uci` by clicking its two squares on the 3D board, and waits until both pages show it. */
async function clickMove3d(mover, other, uci) {
  const n = await plies(mover);
  await click3d(mover, uci.slice(0, 2));
  await click3d(mover, uci.slice(2, 4));
  try {
    await waitPlies(mover, n + 1);
    await waitPlies(other, n + 1);
  } catch (e) {
    await shot(mover, `failed-3d-${uci}-mover`);
    throw new Error(`${uci} was not played on the 3D board: ${e.message}`);
  }
}

/**
 * How many pixels of a PNG screenshot are within `tol` of colour [r, g, b] on every
 * channel (decoded by the page's own image decoder).
 */
const countColour = (page, png, rgb, tol = 40) => page.evaluate(async ([b64, [r, g, b], tol]) => {
  const img = new Image();
  img.src = `data:image/png;base64,${b64}`;
  await img.decode();
  const c = document.createElement('canvas');
  c.width = img.width;
  c.height = img.height;
  const g2 = c.getContext('2d');
  g2.drawImage(img, 0, 0);
  const d = g2.getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i] - r) <= tol && Math.abs(d[i + 1] - g) <= tol && Math.abs(d[i + 2] - b) <= tol) n++;
  return n;
}, [png.toString('base64'), rgb, tol]);

test('3D: a hidden game played partly in 2D and partly in 3D (switched mid-game, moves by clicks and a drag on the 3D squares, a reveal and a private capture seen in 3D, hidden marks drawn), every board look and piece set dressing the 3D board, orbit and zoom within limits, back to 2D; without WebGL the board stays 2D and says why', { skip: SKIP || false }, async () => {
  const { white, black, id } = await twoPlayers({ variant: 'hidden' });
  const [w, b] = [white.page, black.page];
  // 2D first.
  await clickMove(w, b, 'e2e4');
  await clickMove(b, w, 'e7e5');
  // White lifts the board mid-game.
  await to3d(w);
  assert.equal(await w.getAttribute('#view3d', 'aria-pressed'), 'true');
  let scene = await scene3d(w);
  assert.equal(Object.keys(scene.pieces).length, 32);
  assert.equal(Object.values(scene.pieces).filter((p) => p.hidden).length, 28, 'every piece not yet moved is hidden');
  assert.deepEqual(scene.pieces.e4, { piece: 'wp', hidden: false, unveiled: false });
  assert.deepEqual(scene.last, ['e7', 'e5']);
  // The hidden mark (purple #7b1fa2) is drawn: on the 3D board's pixels, not only in its state.
  const purple = await countColour(w, await boardShot(w), [0x7b, 0x1f, 0xa2], 30);
  assert.ok(purple > 500, `hidden marks drawn in 3D: ${purple} purple pixels`);
  await shot(w, '24-3d-hidden');
  // The game screen with the 3D board passes axe-core as the 2D one does.
  assert.deepEqual(await axeViolations(w, 'game, 3D board'), []);
  // 2. Bc4 by two clicks on the 3D squares: the hidden piece on f1 reveals itself a bishop.
  await clickMove3d(w, b, 'f1c4');
  scene = await scene3d(w);
  assert.deepEqual(scene.pieces.c4, { piece: 'wb', hidden: false, unveiled: false });
  assert.equal(scene.pieces.f1, undefined);
  assert.ok(scene.reveals.includes('c4'), `the reveal shown in 3D: ${JSON.stringify(scene.reveals)}`);
  // Black plays on in 2D.
  await clickMove(b, w, 'd8h4');
  // 3. Bxf7+: White takes a hidden pawn; the capture's identity (sent to White alone) is
  // what White sees sink away in 3D.
  await clickMove3d(w, b, 'c4f7');
  scene = await scene3d(w);
  assert.deepEqual(scene.captures.at(-1), { square: 'f7', piece: 'bp', hidden: false, identified: true });
  assert.deepEqual((await gameState(w)).capturedIdentities.map((c) => `${c.square}:${c.role}`), ['f7:pawn']);
  assert.deepEqual((await gameState(b)).capturedIdentities, [], 'Black is told nothing');
  assert.equal(await w.locator('.cid[data-square="f7"]').count(), 1);
  assert.ok(scene.anims.includes('slide') && scene.anims.includes('capture') && scene.anims.includes('reveal'), `animations in 3D: ${scene.anims}`);
  await checkNoUnsentIdentity(white, id);
  await checkNoUnsentIdentity(black, id);
  await clickMove(b, w, 'e8f7');
  // 4. h3 by dragging the pawn on the 3D board.
  const from = await point3d(w, 'h2');
  const to = await point3d(w, 'h3');
  const n = await plies(w);
  await w.mouse.move(from.x, from.y);
  await w.mouse.down();
  await w.mouse.move(to.x, to.y, { steps: 8 });
  await w.mouse.up();
  await waitPlies(b, n + 1);
  assert.equal((await gameState(b)).moves.at(-1).uci, 'h2h3');
  await clickMove(b, w, 'f8c5');
  // Orbit (a drag from an empty square) and zoom, both within their limits.
  const cam = () => w.evaluate(() => {
    const b3 = window.frontier.three.board;
    return { yaw: b3.yaw, pitch: b3.pitch, distance: b3.distance };
  });
  const start = await cam();
  const d4 = await point3d(w, 'd4');
  await w.mouse.move(d4.x, d4.y);
  await w.mouse.down();
  await w.mouse.move(d4.x + 300, d4.y + 250, { steps: 10 });
  await w.mouse.up();
  let c = await cam();
  assert.ok(c.yaw !== start.yaw && c.pitch !== start.pitch, 'the drag turned the board');
  assert.ok(c.yaw >= -Math.PI && c.pitch >= 0.12 && c.pitch <= 1.2, `within limits: ${JSON.stringify(c)}`);
  assert.equal((await gameState(w)).moves.length, n + 2, 'turning the board made no move');
  await w.mouse.move(d4.x, d4.y);
  for (let i = 0; i < 30; i++) await w.mouse.wheel(0, 400);
  assert.equal((await cam()).distance, 24, 'zoomed out to the limit');
  await w.evaluate(() => window.frontier.three.board.setCamera({ yaw: 0, pitch: 0.72, distance: 15.5 }));
  // A move from the turned-back camera still lands where it is clicked.
  await clickMove3d(w, b, 'a2a3');
  // Every board look and piece set, chosen mid-game, dresses the 3D board differently.
  await new Promise((r) => setTimeout(r, 1300)); // past the move's animation: the board stands still
  await w.click('#looks summary');
  mkdirSync(`${SHOTS}docs`, { recursive: true });
  const board = async (name) => {
    const img = await boardShot(w, { path: `${SHOTS}${name}.png` });
    await boardShot(w, { path: `${SHOTS}docs/${name}.jpg`, type: 'jpeg', quality: 70 });
    return img.toString('base64');
  };
  const looks = [];
  for (const look of ['felt', 'marble', 'sandstone', 'glacier', 'amber', 'tidepool', 'chamber']) {
    await w.selectOption('#board-look', look);
    await w.waitForFunction((l) => window.frontier.scene3d()?.look === l, look, { timeout: WAIT });
    const img = await board(`board3d-${look}`);
    assert.ok(!looks.includes(img), `the ${look} look dresses the 3D board differently from every other`);
    looks.push(img);
  }
  await w.selectOption('#board-look', 'marble');
  await w.waitForFunction(() => window.frontier.scene3d()?.look === 'marble', null, { timeout: WAIT });
  const sets = [];
  for (const set of ['frontier', 'geometric', 'letters', 'emblem', 'outline', 'pixel', 'relief']) {
    await w.selectOption('#piece-set', set);
    await w.waitForFunction((s) => localStorage.getItem('frontier.pieces') === JSON.stringify(s), set);
    const img = await board(`pieces3d-${set}`);
    assert.ok(!sets.includes(img), `the ${set} set draws the 3D pieces differently from every other`);
    sets.push(img);
  }
  await w.selectOption('#piece-set', 'frontier');
  // The choice of 3D is kept across a reload; back to 2D mid-game.
  await w.reload();
  await w.waitForFunction(() => window.frontier.scene3d()?.look, null, { timeout: WAIT });
  await w.click('#view3d');
  await w.waitForSelector('#board svg', { timeout: WAIT });
  assert.equal(await w.locator('#board canvas').count(), 0);
  assert.equal(await w.evaluate(() => localStorage.getItem('frontier.view3d')), 'false');
  // A browser without WebGL: the board stays 2D, with a message.
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 }, locale: 'en-US' });
  await context.addInitScript(() => {
    const real = HTMLCanvasElement.prototype.getContext;
    HTMLCanvasElement.prototype.getContext = function (kind, ...rest) {
      return /webgl/.test(kind) ? null : real.call(this, kind, ...rest);
    };
  });
  const page = await context.newPage();
  await page.goto(base + '/');
  await enterAsGuest(page);
  await page.evaluate((gid) => (location.hash = `#/game/${gid}`), id);
  await page.waitForSelector('#board svg', { timeout: WAIT });
  await page.click('#view3d');
  await page.waitForFunction(() => !document.querySelector('#notice').hidden, null, { timeout: WAIT });
  assert.match(await page.textContent('#notice'), /cannot draw the 3D board/);
  assert.equal(await page.locator('#board svg').count(), 1);
  assert.equal(await page.locator('#board canvas').count(), 0);
  assert.equal(await page.getAttribute('#view3d', 'aria-pressed'), 'false');
  await context.close();
  await clickMove(b, w, 'h4f2');
  await w.waitForSelector('#result', { timeout: WAIT });
  await white.context.close();
  await black.context.close();
});

test('3D: an atomic explosion animated on the 3D board', { skip: SKIP || false }, async () => {
  const { white, black } = await twoPlayers({ variant: 'atomic' });
  const [w, b] = [white.page, black.page];
  await to3d(w);
  await clickMove3d(w, b, 'e2e4');
  await clickMove(b, w, 'd7d5');
  // Every frame the 3D board draws is read back as it is drawn: the largest count of the
  // fireball's orange pixels in one frame.
  await w.evaluate(() => {
    const b3 = window.frontier.three.board;
    window.__orange = 0;
    b3.afterRender = () => {
      const gl = b3.renderer.getContext();
      const { width, height } = gl.canvas;
      const px = new Uint8Array(width * height * 4);
      gl.readPixels(0, 0, width, height, gl.RGBA, gl.UNSIGNED_BYTE, px);
      let n = 0;
      for (let i = 0; i < px.length; i += 4) if (px[i] > 200 && px[i + 1] > 70 && px[i + 1] < 170 && px[i + 2] < 90) n++;
      window.__orange = Math.max(window.__orange, n);
    };
  });
  await clickMove3d(w, b, 'e4d5');
  await w.waitForFunction(() => window.__orange > 500, null, { timeout: WAIT }).catch(() => {});
  const orange = await w.evaluate(() => window.__orange);
  await w.evaluate(() => (window.frontier.three.board.afterRender = null));
  assert.ok(orange > 500, `the explosion drawn in 3D: at most ${orange} orange pixels in a frame`);
  const scene = await scene3d(w);
  // The capture square, the capturer's origin... every square the blast emptied.
  assert.ok(scene.booms.includes('d5') && scene.booms.includes('e4'), `blasts at ${scene.booms}`);
  assert.ok(scene.anims.includes('explode'), `animations: ${scene.anims}`);
  assert.equal(scene.pieces.d5, undefined, 'the capturer went up with the capture');
  await shot(w, '25-3d-explosion');
  await white.context.close();
  await black.context.close();
});

test('preferences: a registered player\'s board look, piece set, 2D/3D and mute follow the account to another browser; a guest\'s stay in its own', { skip: SKIP || false }, async () => {
  const name = `pref${Math.random().toString(36).slice(2, 7)}`;
  const first = await player();
  const a = first.page;
  await register(a, name);
  await createBoard(a, { variant: 'hidden' });
  // Chosen on the game screen, each written to the account as it is made.
  await a.click('#looks summary');
  await a.waitForSelector('#looks[open]');
  await a.selectOption('#board-look', 'glacier');
  await a.waitForSelector('#looks[open] #piece-set');
  await a.selectOption('#piece-set', 'pixel');
  await a.click('#view3d');
  await a.click('#mute');
  await a.waitForFunction(() => window.frontier.prefs.pending === 0 && window.frontier.prefs.saved >= 4, null, { timeout: WAIT });
  // Another browser (nothing in its storage) logs in: the account's choices apply.
  const second = await player();
  const b = second.page;
  assert.equal(await b.evaluate(() => localStorage.getItem('frontier.theme')), null);
  await b.fill('input[name=username]', name);
  await b.fill('input[name=password]', 'correct horse battery 9');
  await b.click('button[name=login]');
  await b.waitForFunction(() => window.frontier.prefs.loaded >= 1, null, { timeout: WAIT });
  const kept = await b.evaluate(() => ['theme', 'pieces', 'view3d', 'muted'].map((k) => JSON.parse(localStorage.getItem(`frontier.${k}`))));
  assert.deepEqual(kept, ['glacier', 'pixel', true, true]);
  assert.equal(await b.inputValue('#theme'), 'glacier');
  assert.equal(await b.evaluate(() => document.documentElement.dataset.theme), 'glacier');
  // A change there is kept for the first browser's next visit.
  await b.selectOption('#theme', 'amber');
  await b.waitForFunction(() => window.frontier.prefs.pending === 0 && window.frontier.prefs.saved >= 1, null, { timeout: WAIT });
  await a.reload();
  await a.waitForFunction(() => window.frontier.prefs.loaded >= 1, null, { timeout: WAIT });
  assert.equal(await a.evaluate(() => document.documentElement.dataset.theme), 'amber');
  // A guest asks the account for nothing.
  const guest = await player();
  const asked = [];
  guest.page.on('request', (r) => r.url().includes('/api/me/') && asked.push(r.url()));
  await enterAsGuest(guest.page);
  // The lobby may still be drawn again after entering (the status frame that follows the
  // connection): the header is kept through such a redraw (`render`), so a choice made
  // meanwhile stands. A header drawn anew under the choice once lost it (seen on CI, here
  // and for the registered player above).
  await guest.page.selectOption('#theme', 'felt');
  await guest.page.waitForFunction(() => localStorage.getItem('frontier.theme') === '"felt"', null, { timeout: WAIT });
  await guest.page.waitForFunction(() => document.documentElement.dataset.theme === 'felt', null, { timeout: WAIT });
  assert.deepEqual(asked, []);
  for (const c of [first, second, guest]) await c.context.close();
});

// ---------------------------------------------------------------- accessibility (issue 25)

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * axe-core on the page as it stands: every violation of impact serious or critical, as
 * "rule (impact): targets" lines (printed, and returned for the assertion).
 */
async function axeViolations(page, where) {
  if (!(await page.evaluate(() => !!window.axe))) await page.addScriptTag({ content: AXE });
  const violations = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) }));
  });
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  for (const v of bad) console.log(`axe ${where}: ${v.id} (${v.impact}) ${v.help}: ${v.targets.join(', ')}`);
  return bad.map((v) => `${where}: ${v.id} (${v.impact}): ${v.targets.join(', ')}`);
}

/**
 * Each of the five languages chosen as a player does (the header's menu), in the light and
 * the dark scheme (the header's switch), axe on each; back to English, light. `modal`: a
 * dialog covers the header (as it should), so its switch gets its click event directly.
 */
async function axeInEveryLanguage(page, where, found, { modal = false } = {}) {
  const darkSwitch = () => (modal ? page.dispatchEvent('#dark', 'click') : page.click('#dark'));
  for (const dark of [false, true]) {
    if ((await page.getAttribute('#dark', 'aria-pressed')) !== String(dark)) await darkSwitch();
    await page.waitForFunction((d) => document.documentElement.classList.contains('dark') === d, dark);
    for (const [code] of LANGS) {
      await page.selectOption('#lang', code);
      await page.waitForFunction((c) => document.documentElement.lang === c, code);
      // Past any move's animation: the page as it stays.
      await new Promise((r) => setTimeout(r, 300));
      found.push(...(await axeViolations(page, `${where} [${code}${dark ? ', dark' : ''}]`)));
    }
  }
  await darkSwitch();
  await page.selectOption('#lang', 'en');
  await page.waitForFunction(() => document.documentElement.lang === 'en' && !document.documentElement.classList.contains('dark'));
}

test('accessibility: axe-core finds no serious or critical violation on the entry, the lobby, a game, the result dialog, the dashboard and a game record, in all five languages, light and dark', { skip: SKIP || false }, async () => {
  const suffix = Math.random().toString(36).slice(2, 7);
  const found = [];
  const white = await player();
  const black = await player();
  await axeInEveryLanguage(white.page, 'enter', found);
  await register(white.page, `axew${suffix}`);
  await register(black.page, `axeb${suffix}`);
  const w = white.page;
  await w.waitForSelector('#create');
  await axeInEveryLanguage(w, 'lobby', found);
  const { code } = await createBoard(w, { variant: 'hidden' });
  await joinByCode(black.page, code);
  await w.waitForFunction(() => [...window.frontier.games.values()].some((g) => g.status === 'playing'), null, { timeout: WAIT });
  // A hidden game in progress: reveals, a private capture.
  const line = ['e2e4', 'e7e5', 'f1c4', 'd8h4', 'c4f7', 'e8f7', 'h2h3', 'f8c5', 'a2a3'];
  for (const [i, uci] of line.entries()) {
    const [mover, other] = i % 2 === 0 ? [w, black.page] : [black.page, w];
    await clickMove(mover, other, uci);
  }
  await axeInEveryLanguage(w, 'game', found);
  // 6... Qxf2#: the result dialog (with the revealed layout and the rematch offer).
  await clickMove(black.page, w, 'h4f2');
  await w.waitForSelector('#result', { timeout: WAIT });
  await axeInEveryLanguage(w, 'result dialog', found, { modal: true });
  await w.click('#close-result');
  await w.click('a[data-nav=dashboard]');
  await w.waitForSelector('#main.dashboard table', { timeout: WAIT });
  await axeInEveryLanguage(w, 'dashboard', found);
  await w.click('.games a');
  await w.waitForSelector('#main.record #board svg', { timeout: WAIT });
  await axeInEveryLanguage(w, 'game record', found);
  await white.context.close();
  await black.context.close();
  assert.deepEqual(found, [], `axe-core: ${found.length} serious or critical violations`);
});

// ---------------------------------------------------------------- moderation (issue 27)

/** Errors thrown in the page (a screen that crashed instead of showing what went wrong). */
function pageErrors(page) {
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  return errors;
}

const modLink = (page) => page.locator('header.top nav a[href="#/moderation"]');

async function goHash(page, hash) {
  await page.evaluate((h) => (location.hash = h), hash);
}

test('moderation: a player who is not a moderator sees no Moderation entry, and the moderation screens reached directly say "for moderators only" (403 forbidden) instead of breaking', { skip: SKIP || false }, async () => {
  const suffix = Math.random().toString(36).slice(2, 7);
  const me = await player();
  const errors = pageErrors(me.page);
  await register(me.page, `nomod${suffix}`);
  await me.page.waitForSelector('#create');
  assert.equal(await modLink(me.page).count(), 0, 'no Moderation entry for a player without the role');
  // The server refuses the token (the client's view of the claim is for display only).
  const answers = await me.page.evaluate(async () => {
    const get = async (headers) => {
      const r = await fetch('/api/moderation/reports', { headers });
      return [r.status, (await r.json()).error.code];
    };
    return [await get({}), await get({ authorization: `Bearer ${window.frontier.token}` })];
  });
  assert.deepEqual(answers, [[401, 'token_missing'], [403, 'forbidden']]);
  for (const hash of ['#/moderation', '#/moderation/log', '#/moderation/report/some-report']) {
    await goHash(me.page, hash);
    const alert = me.page.locator('#main.moderation .error[role=alert]');
    await alert.waitFor({ timeout: WAIT });
    assert.equal((await alert.textContent()).trim(), 'For fair-play moderators only.', hash);
    assert.equal(await me.page.locator('#main.moderation table, #main.moderation .mod-nav, #mod-decide').count(), 0, `${hash}: no moderation table, links or actions for a non-moderator`);
    // The header stays usable: back to the lobby.
    assert.equal(await modLink(me.page).count(), 0);
  }
  // In Italian too (the refusal is translated, not the server's English message).
  await me.page.selectOption('#lang', 'it');
  await me.page.waitForSelector('#main.moderation .error[role=alert]', { timeout: WAIT });
  await me.page.waitForFunction(() => /moderatori/.test(document.querySelector('#main.moderation .error').textContent), null, { timeout: WAIT });
  await me.page.selectOption('#lang', 'en');
  await shot(me.page, 'moderation-forbidden');
  await me.page.click('header.top nav a[href="#/"]');
  await me.page.waitForSelector('#create', { timeout: WAIT });
  // A guest is refused the same way.
  const guest = await player();
  const guestErrors = pageErrors(guest.page);
  await enterAsGuest(guest.page);
  assert.equal(await modLink(guest.page).count(), 0);
  await goHash(guest.page, '#/moderation');
  await guest.page.waitForSelector('#main.moderation .error[role=alert]', { timeout: WAIT });
  assert.equal((await guest.page.textContent('#main.moderation .error')).trim(), 'For fair-play moderators only.');
  await me.context.close();
  await guest.context.close();
  assert.deepEqual([...errors, ...guestErrors], [], 'no script error on the refused screens');
});

/**
 * A moderator on its own `frontier dev` (an SQLite `--data` folder, so that `frontier admin
 * grant-moderator` reaches its accounts): registered through the page, granted the role by
 * the operator command, signed in again. Made once, shared by the moderation tests; the
 * server and its folder go at the end of the file's tests.
 */
let moderatorMade;
function moderatorSession() {
  moderatorMade ||= (async () => {
    const dir = mkdtempSync(`${tmpdir()}/frontier-mod-`);
    const own = await startServer([], { data: dir });
    cleanups.push(() => {
      own.proc.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    });
    const name = `mod${Math.random().toString(36).slice(2, 7)}`;
    const me = await player(undefined, { at: own.base });
    await register(me.page, name);
    await me.page.waitForSelector('#create', { timeout: WAIT });
    assert.equal(await modLink(me.page).count(), 0, 'no Moderation entry before the grant');
    const granted = await new Promise((resolve, reject) => {
      const admin = spawn(BIN, ['admin', 'grant-moderator', name.toUpperCase(), '--database-url', `sqlite:${dir}/frontier.db`], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      admin.stdout.on('data', (d) => (out += d));
      admin.stderr.on('data', (d) => (out += d));
      admin.on('error', reject);
      admin.on('exit', (code) => resolve({ code, out }));
    });
    assert.equal(granted.code, 0, `frontier admin grant-moderator: ${granted.out}`);
    assert.match(granted.out, new RegExp(`${name} is a moderator`));
    // The role is in the token from the next sign-in: not before.
    await me.page.reload();
    await me.page.waitForSelector('#create', { timeout: WAIT });
    assert.equal(await modLink(me.page).count(), 0, 'the token the player holds carries no role yet');
    await me.page.click('#signout');
    await me.page.fill('input[name=username]', name);
    await me.page.fill('input[name=password]', 'correct horse battery 9');
    await me.page.click('button[name=login]');
    await me.page.waitForFunction(() => window.frontier.status === 'online', null, { timeout: WAIT });
    return { own, dir, name, ...me };
  })();
  return moderatorMade;
}
const cleanups = [];
after(async () => {
  for (const c of cleanups) c();
});

test('moderation: a player granted the role by `frontier admin grant-moderator` (on frontier dev\'s SQLite file) gets the Moderation entry at the next sign-in; the empty queue, its status filter and the empty audit log render, and pass axe-core in all five languages, light and dark', { skip: SKIP || false }, async () => {
  const { page, name } = await moderatorSession();
  const errors = pageErrors(page);
  await modLink(page).waitFor({ timeout: WAIT });
  // The gateway agrees: the moderation API answers the new token.
  const status = await page.evaluate(async () => (await fetch('/api/moderation/reports', { headers: { authorization: `Bearer ${window.frontier.token}` } })).status);
  assert.equal(status, 200, `${name}'s token is a moderator's`);
  await modLink(page).click();
  await page.waitForSelector('#main.moderation table.mod-queue', { timeout: WAIT });
  assert.equal(await page.getAttribute('.mod-nav a[href="#/moderation"]', 'aria-current'), 'page');
  assert.equal((await page.textContent('table.mod-queue tbody')).trim(), 'No reports here.');
  assert.equal(await page.inputValue('#mod-status'), 'open');
  const found = [];
  await axeInEveryLanguage(page, 'moderation queue (empty)', found);
  await shot(page, 'moderation-queue-empty');
  // The status filter asks the server for that status, and keeps the choice and the focus.
  for (const status of ['dismissed', 'marked', 'all', 'open']) {
    const asked = page.waitForRequest((r) => r.url().includes('/api/moderation/reports?') && new URL(r.url()).searchParams.get('status') === status, { timeout: WAIT });
    await page.selectOption('#mod-status', status);
    await asked;
    await page.waitForFunction((s) => document.querySelector('#mod-status')?.value === s && document.querySelector('table.mod-queue'), status, { timeout: WAIT });
    assert.equal((await page.textContent('table.mod-queue tbody')).trim(), 'No reports here.');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'mod-status', 'focus stays on the filter');
  }
  // The audit log.
  await page.click('.mod-nav a[href="#/moderation/log"]');
  await page.waitForSelector('#main.moderation table.mod-log', { timeout: WAIT });
  assert.equal(await page.getAttribute('.mod-nav a[href="#/moderation/log"]', 'aria-current'), 'page');
  assert.equal((await page.textContent('table.mod-log tbody')).trim(), 'No decisions yet.');
  await axeInEveryLanguage(page, 'moderation audit log (empty)', found);
  await shot(page, 'moderation-log-empty');
  // An unknown report: the server's 404, as a message.
  await goHash(page, '#/moderation/report/no-such-report');
  await page.waitForSelector('#main.moderation .error[role=alert]', { timeout: WAIT });
  assert.equal((await page.textContent('#main.moderation .error')).trim(), 'No report has that id.');
  assert.deepEqual(found, [], `axe-core: ${found.length} serious or critical violations`);
  assert.deepEqual(errors, []);
});

/**
 * The moderation API as the gateway would answer it for a queue with two open reports
 * (docs/protocol.md, Moderation), served to `page` by interception: the real flow is the Rust
 * tests'; this one is the screens' rendering and what they send. Returns what was posted.
 */
async function fakeModerationApi(page, moderator) {
  const now = Date.UTC(2026, 0, 15, 12, 0, 0);
  const move = (ply, played, best, loss, think, extra = {}) => ({ ply, played, best, loss_cp: loss, think_ms: think, legal_moves: 30, near_best: 2, skipped: null, flagged: false, ...extra });
  const reports = [
    {
      id: 'rep-a1', player: { id: 'p-engine', name: 'engineuser' }, variant: 'standard', status: 'open', score: 91.5,
      reasons: [{ code: 'engine_agreement', value: 0.93, threshold: 0.8, detail: '20 games' }, { code: 'steady_think_time', value: 0.11, threshold: 0.25, detail: null }],
      games: 20, rating: 1510, created_at: now, updated_at: now, decided: null,
    },
    {
      id: 'rep-b2', player: { id: 'p-other', name: 'someone' }, variant: 'hidden', status: 'open', score: 73,
      reasons: [{ code: 'low_centipawn_loss', value: 9.5, threshold: 15, detail: null }],
      games: 12, rating: 1400, created_at: now - 60000, updated_at: now - 60000, decided: null,
    },
  ];
  const games = {
    'rep-a1': [
      {
        id: 'g-1', variant: 'standard', color: 'white', opponent: 'bob', result: 'white', rating: 1500, counted_moves: 31, top1: 0.94, acpl: 8.2, near_best: 0.97, think_cv: 0.12, score: 88, ended_at: now - 120000,
        moves: [move(1, 'e2e4', 'e2e4', 0, 1200, { skipped: 'opening' }), move(21, 'g1f3', 'g1f3', 0, 2100, { flagged: true }), move(23, 'f3e5', 'd2d4', 35, 2050), move(25, 'e5f7', 'e5f7', 0, 2000, { flagged: true }), move(27, 'h1g1', 'h1g1', 0, 0, { skipped: 'only_move' })],
      },
      {
        id: 'g-2', variant: 'standard', color: 'black', opponent: 'carol', result: 'black', rating: 1505, counted_moves: 28, top1: 0.9, acpl: 11, near_best: 0.95, think_cv: 0.15, score: 84, ended_at: now - 600000,
        moves: [move(22, 'c7c5', 'c7c5', 0, 1900, { flagged: true }), move(24, 'b8c6', 'g8f6', 20, 1700)],
      },
    ],
    'rep-b2': [],
  };
  const log = [];
  const posted = [];
  const json = (route, status, body) => route.fulfill({ status, contentType: 'application/json', body: JSON.stringify(body) });
  await page.route((url) => url.pathname.startsWith('/api/moderation/'), async (route) => {
    const req = route.request();
    const url = new URL(req.url());
    if (!/^Bearer .+/.test(req.headers().authorization || '')) return json(route, 401, { error: { code: 'token_missing', message: 'no token' } });
    const parts = url.pathname.split('/').slice(3); // ['reports', id, 'decision'] …
    if (req.method() === 'GET' && parts[0] === 'reports' && parts.length === 1) {
      const status = url.searchParams.get('status') || 'open';
      return json(route, 200, { reports: reports.filter((r) => status === 'all' || r.status === status) });
    }
    const report = reports.find((r) => r.id === parts[1]);
    if (parts[0] === 'reports' && !report) return json(route, 404, { error: { code: 'report_not_found', message: 'no such report' } });
    if (req.method() === 'GET' && parts[0] === 'reports' && parts.length === 2) return json(route, 200, { report, games: games[report.id] });
    if (req.method() === 'POST' && parts[2] === 'decision') {
      const body = req.postDataJSON();
      posted.push({ path: url.pathname, body });
      // The second report was decided by another moderator meanwhile.
      if (report.id === 'rep-b2' || report.status !== 'open') return json(route, 409, { error: { code: 'already_decided', message: 'decided already' } });
      report.status = body.action === 'mark' ? 'marked' : 'dismissed';
      report.decided = { by: { id: 'p-mod', name: moderator }, at: now + 1000, note: body.note };
      log.unshift({ action: body.action, report_id: report.id, player: report.player, moderator: { id: 'p-mod', name: moderator }, note: body.note, at: now + 1000 });
      return json(route, 200, report);
    }
    if (req.method() === 'GET' && parts[0] === 'log') return json(route, 200, { entries: log });
    return json(route, 400, { error: { code: 'bad_field', message: 'unexpected in this test' } });
  });
  return { posted, games };
}

test('moderation: a report\'s page (the API intercepted with a realistic answer) shows its reasons, its games and their moves with the flagged ones marked ⚑; dismiss and mark are confirmed in the page and post the action and the note; a report decided meanwhile says so; the queue, the report and the audit log with rows pass axe-core in all five languages, light and dark', { skip: SKIP || false }, async () => {
  const { page, name } = await moderatorSession();
  const errors = pageErrors(page);
  const { posted, games } = await fakeModerationApi(page, name);
  const found = [];
  await goHash(page, '#/');
  await modLink(page).click();
  await page.waitForSelector('table.mod-queue', { timeout: WAIT });
  if ((await page.inputValue('#mod-status')) !== 'open') await page.selectOption('#mod-status', 'open');
  await page.waitForSelector('table.mod-queue tr[data-report="rep-a1"] + tr[data-report="rep-b2"]', { timeout: WAIT });
  const row = await page.textContent('tr[data-report="rep-a1"]');
  assert.match(row, /engineuser/);
  assert.match(row, /Standard/i);
  assert.match(row, /92/, 'the score, rounded');
  assert.match(row, /Agreement with the engine \(0\.93 \/ 0\.8\)/);
  await axeInEveryLanguage(page, 'moderation queue', found);
  await shot(page, 'moderation-queue');

  // The report: its reasons, two games, every move, the flagged ones marked.
  await page.click('tr[data-report="rep-a1"] a');
  await page.waitForSelector('#main.moderation .mod-game', { timeout: WAIT });
  assert.equal(page.url().split('#')[1], '/moderation/report/rep-a1');
  assert.match(await page.textContent('#main.moderation h1'), /Report on engineuser/);
  assert.equal(await page.locator('.mod-reasons li').count(), 2);
  assert.match(await page.textContent('.mod-reasons'), /20 games/);
  assert.equal(await page.locator('.mod-game').count(), 2);
  const shown = await page.$$eval('.mod-game', (sections) => sections.map((s) => ({
    heading: s.querySelector('h2').textContent,
    replay: s.querySelector('a[href^="#/record/"]').getAttribute('href'),
    rows: [...s.querySelectorAll('.mod-moves tbody tr')].map((tr) => ({ flaggedClass: tr.classList.contains('flagged'), text: tr.textContent, cells: [...tr.cells].map((c) => c.textContent) })),
  })));
  for (const [i, g] of games['rep-a1'].entries()) {
    assert.match(shown[i].heading, new RegExp(`vs ${g.opponent}`));
    assert.equal(shown[i].replay, `#/record/${g.id}`);
    assert.equal(shown[i].rows.length, g.moves.length, `game ${g.id}: every move listed`);
    for (const [j, m] of g.moves.entries()) {
      const r = shown[i].rows[j];
      assert.equal(r.cells[0], String(m.ply));
      assert.equal(r.cells[1], m.played);
      assert.equal(r.cells[2], m.best);
      assert.equal(r.flaggedClass, m.flagged, `ply ${m.ply} highlighted iff flagged`);
      assert.equal(r.text.includes('⚑'), m.flagged, `ply ${m.ply}: ⚑ iff flagged`);
    }
  }
  assert.match(shown[0].rows[0].text, /opening/);
  assert.match(shown[0].rows[4].text, /only move/);
  assert.equal(shown[0].rows[4].cells[4], '–', 'an unknown think time');
  // The flagged rows' highlight is visible (a background, not only the mark).
  const bg = await page.$eval('.mod-moves tr.flagged td', (td) => getComputedStyle(td).backgroundColor);
  assert.notEqual(bg, 'rgba(0, 0, 0, 0)');
  await axeInEveryLanguage(page, 'moderation report', found);
  await shot(page, 'moderation-report');

  // Mark, cancelled: nothing is sent, the focus is back on the button.
  await page.click('#mod-mark');
  assert.match(await page.textContent('#confirm-text'), /engineuser/);
  await confirmInPage(page, false);
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'mod-mark');
  assert.deepEqual(posted, []);
  // Dismiss with a note, confirmed: the action and the note are posted; the page shows the decision.
  await page.fill('#mod-note', 'Strong club player; think times vary with the position.');
  await page.click('#mod-dismiss');
  await confirmInPage(page, true);
  await page.waitForSelector('.mod-decided', { timeout: WAIT });
  assert.deepEqual(posted, [{ path: '/api/moderation/reports/rep-a1/decision', body: { action: 'dismiss', note: 'Strong club player; think times vary with the position.' } }]);
  assert.match(await page.textContent('.mod-decided'), new RegExp(`Decided by ${name}.*Strong club player`));
  assert.match(await page.textContent('#main.moderation section.card'), /Dismissed/);
  assert.equal(await page.locator('#mod-dismiss, #mod-mark').count(), 0, 'a decided report offers no decision');

  // The other report was decided by someone else meanwhile: the 409 is said, not thrown.
  await goHash(page, '#/moderation/report/rep-b2');
  await page.waitForSelector('#mod-mark', { timeout: WAIT });
  assert.equal(await page.locator('.mod-game').count(), 0);
  await page.click('#mod-mark');
  await confirmInPage(page, true);
  await page.waitForFunction(() => document.querySelector('#mod-error')?.textContent, null, { timeout: WAIT });
  assert.equal(await page.textContent('#mod-error'), 'That report was decided already.');
  assert.deepEqual(posted[1], { path: '/api/moderation/reports/rep-b2/decision', body: { action: 'mark', note: '' } });

  // The queue's filter: the dismissed report under Dismissed, no longer under Open.
  await page.click('.mod-nav a[href="#/moderation"]');
  await page.waitForSelector('table.mod-queue', { timeout: WAIT });
  await page.selectOption('#mod-status', 'dismissed');
  await page.waitForFunction(() => document.querySelector('#mod-status')?.value === 'dismissed' && document.querySelector('tr[data-report="rep-a1"]'), null, { timeout: WAIT });
  assert.equal(await page.locator('tr[data-report]').count(), 1);
  await page.selectOption('#mod-status', 'open');
  await page.waitForFunction(() => document.querySelector('#mod-status')?.value === 'open' && document.querySelector('tr[data-report="rep-b2"]'), null, { timeout: WAIT });
  assert.equal(await page.locator('tr[data-report="rep-a1"]').count(), 0);

  // The audit log: the decision, who made it, its note, a link to the report.
  await page.click('.mod-nav a[href="#/moderation/log"]');
  await page.waitForSelector('table.mod-log tbody tr a[href="#/moderation/report/rep-a1"]', { timeout: WAIT });
  const entry = await page.textContent('table.mod-log tbody tr');
  assert.match(entry, /Dismissed/);
  assert.match(entry, new RegExp(name));
  assert.match(entry, /Strong club player/);
  await axeInEveryLanguage(page, 'moderation audit log', found);
  await shot(page, 'moderation-log');
  await page.unroute((url) => url.pathname.startsWith('/api/moderation/'));
  assert.deepEqual(found, [], `axe-core: ${found.length} serious or critical violations`);
  assert.deepEqual(errors, []);
});

// ---------------------------------------------------------------- performance (issue 25)

test('performance: the client\'s shipped size (raw and gzip, with and without the 3D code), a move\'s time from the server\'s frame to the board drawn (p95 over 60 moves, 2D and 3D), frames per second while orbiting the 3D board (printed: no wall-clock figure is asserted)', { skip: SKIP || false }, async () => {
  // The files the gateway embeds and serves: everything under web/app/.
  const APP = `${HERE}../app/`;
  const files = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const path = dir + name;
      if (statSync(path).isDirectory()) walk(path + '/');
      else files.push(path);
    }
  };
  walk(APP);
  // The 3D code: three.js (vendor/) and the 3D board, fetched only when a player chooses 3D.
  const is3d = (f) => f.startsWith(`${APP}vendor/`) || f === `${APP}js/board3d.js`;
  const size = (list) => {
    let raw = 0;
    let gz = 0;
    for (const f of list) {
      const bytes = readFileSync(f);
      raw += bytes.length;
      gz += gzipSync(bytes, { level: 9 }).length;
    }
    return { raw, gz, n: list.length };
  };
  const kib = (b) => `${(b / 1024).toFixed(1)} KiB`;
  const without = size(files.filter((f) => !is3d(f)));
  const all = size(files);
  console.log(`web client without the 3D code: ${without.n} files, ${kib(without.raw)} raw, ${kib(without.gz)} gzip -9 per file`);
  console.log(`web client with the 3D code: ${all.n} files, ${kib(all.raw)} raw, ${kib(all.gz)} gzip -9 per file (3D: +${kib(all.gz - without.gz)} gzip, fetched only when 3D is chosen)`);
  assert.ok(without.raw > 0 && all.gz > without.gz);

  // 60 plies of a standard game (a fixed line without repetition, check or promotion
  // that ends it), by clicks; White's page times each move's frame to its board drawn.
  const line = ['d2d4', 'c7c5', 'b2b3', 'g8f6', 'e2e4', 'e7e6', 'h2h3', 'f8e7', 'b1a3', 'e8g8', 'd1d2', 'f6e4', 'd4c5', 'e4g3', 'd2e2',
    'g3h5', 'c1e3', 'g7g5', 'h3h4', 'd8c7', 'a3b1', 'h5g3', 'e2d1', 'c7f4', 'd1d5', 'b8a6', 'e1d2', 'e7c5', 'f1a6', 'g3h1', 'd5e6',
    'b7a6', 'e6f5', 'h7h6', 'f5h7', 'g8h7', 'b1c3', 'f4e5', 'a1f1', 'a6a5', 'd2c1', 'e5e8', 'e3f4', 'g5g4', 'f4c7', 'h7g8', 'g1h3',
    'd7d6', 'c3d1', 'f7f5', 'f1h1', 'e8a4', 'b3b4', 'c5d4', 'b4b5', 'd6d5', 'c2c4', 'd5c4', 'h1f1', 'a4b5'];
  const { white, black } = await twoPlayers({ variant: 'standard' });
  const w = white.page;
  await w.evaluate(() => (window.frontier.perf.moveDrawn.length = 0));
  for (const [i, uci] of line.entries()) {
    const [mover, other] = i % 2 === 0 ? [w, black.page] : [black.page, w];
    await clickMove(mover, other, uci);
  }
  await w.waitForFunction((n) => window.frontier.perf.moveDrawn.length >= n, line.length, { timeout: WAIT });
  const samples = await w.evaluate(() => window.frontier.perf.moveDrawn.slice());
  assert.ok(samples.length >= 50, `${samples.length} samples`);
  const sorted = samples.slice().sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
  console.log(`a move, frame received → board drawn (next animation frame), 2D, ${samples.length} moves: median ${at(0.5).toFixed(1)} ms, p95 ${at(0.95).toFixed(1)} ms, max ${sorted[sorted.length - 1].toFixed(1)} ms`);
  await white.context.close();
  await black.context.close();

  // The same in 3D: White plays the line by clicks on the 3D board (Black in 2D).
  const game3d = await twoPlayers({ variant: 'standard' });
  const w3 = game3d.white.page;
  const b3 = game3d.black.page;
  await to3d(w3);
  // Not the 2D's client-side JS that a 2D player would have loaded: the module came only now.
  assert.ok(await w3.evaluate(() => performance.getEntriesByType('resource').some((r) => r.name.endsWith('/app/vendor/three.module.min.js'))));
  await w3.evaluate(() => (window.frontier.perf.moveDrawn.length = 0));
  for (const [i, uci] of line.entries()) {
    if (i % 2 === 0) await clickMove3d(w3, b3, uci);
    else await clickMove(b3, w3, uci);
  }
  await w3.waitForFunction((n) => window.frontier.perf.moveDrawn.length >= n, line.length, { timeout: WAIT });
  const samples3d = (await w3.evaluate(() => window.frontier.perf.moveDrawn.slice())).sort((a, b) => a - b);
  assert.ok(samples3d.length >= 50, `${samples3d.length} samples`);
  const at3 = (q) => samples3d[Math.min(samples3d.length - 1, Math.ceil(q * samples3d.length) - 1)];
  console.log(`a move, frame received → board drawn (next animation frame), 3D, ${samples3d.length} moves: median ${at3(0.5).toFixed(1)} ms, p95 ${at3(0.95).toFixed(1)} ms, max ${samples3d[samples3d.length - 1].toFixed(1)} ms`);
  // 60 moves redrawn: WebGL holds only the shared models and this draw's own buffers.
  const { memory } = await scene3d(w3);
  assert.ok(memory.geometries < 40 && memory.textures < 8, `no WebGL memory kept per move: ${JSON.stringify(memory)}`);

  // Orbiting: the board is pressed on an empty square (the real mouse), then the pointer
  // goes round a circle for 3 s as a mouse reporting every frame would (a pointermove per
  // animation frame, dispatched in the page: the test driver's own round trips would
  // otherwise set the pace), then released; the frames the board drew meanwhile, per second.
  await new Promise((r) => setTimeout(r, 1300)); // past the last move's animation
  const scene = await scene3d(w3);
  const empty = ['d4', 'e4', 'd5', 'e5', 'c4', 'f4', 'c5', 'f5', 'b4', 'g4', 'a5', 'h5'].find((sq) => !scene.pieces[sq]);
  const p = await point3d(w3, empty);
  await w3.mouse.move(p.x, p.y);
  await w3.mouse.down();
  const orbit = await w3.evaluate(([x, y]) => new Promise((resolve) => {
    const b3 = window.frontier.three.board;
    const yaw0 = b3.yaw;
    const t0 = performance.now();
    const step = (now) => {
      const k = (now - t0) / 1000;
      b3.canvas.dispatchEvent(new PointerEvent('pointermove', { clientX: x + 160 * Math.sin(k * 2), clientY: y + 60 * (1 - Math.cos(k * 2)), pointerType: 'mouse', buttons: 1, bubbles: true }));
      if (now - t0 < 3000) requestAnimationFrame(step);
      else {
        const t1 = performance.now();
        const s = b3.stats;
        const within = s.renderAt.map((at, i) => [at, s.renderMs[i]]).filter(([at]) => at > t0 && at <= t1);
        resolve({ frames: within.length, ms: within.map(([, ms]) => ms).sort((a, b) => a - b), seconds: (t1 - t0) / 1000, turned: b3.yaw !== yaw0 });
      }
    };
    requestAnimationFrame(step);
  }), [p.x, p.y]);
  await w3.mouse.up();
  assert.ok(orbit.turned, 'the board turned');
  const fps = orbit.frames / orbit.seconds;
  const renderP95 = orbit.ms[Math.max(0, Math.ceil(0.95 * orbit.ms.length) - 1)];
  console.log(`orbiting the 3D board (headless Chromium, SwiftShader software WebGL, drawn at half resolution while turning): ${orbit.frames} frames in ${orbit.seconds.toFixed(2)} s = ${fps.toFixed(1)} frames/s; a frame's render call (the CPU side) p95 ${renderP95.toFixed(1)} ms`);
  // A rate is the machine's as much as the client's (18 frames/s once, beside a release
  // build on the same 2 cores): printed for docs/benchmarks.md, not asserted. What is
  // asserted is that turning the board draws it, frame after frame.
  assert.ok(orbit.frames >= 2, `the board is drawn while it turns: ${orbit.frames} frames`);
  // For the record, not asserted: the same turning drawn at full resolution throughout.
  const full = await w3.evaluate(() => new Promise((resolve) => {
    const b3 = window.frontier.three.board;
    const t0 = performance.now();
    let frames = 0;
    const step = (now) => {
      b3.yaw = Math.sin((now - t0) / 500);
      b3.render();
      frames += 1;
      if (now - t0 < 2000) requestAnimationFrame(step);
      else resolve(frames / ((performance.now() - t0) / 1000));
    };
    requestAnimationFrame(step);
  }));
  console.log(`the same at full resolution (${await w3.evaluate(() => window.frontier.three.board.size.join('×'))} px): ${full.toFixed(1)} frames/s`);
  await game3d.white.context.close();
  await game3d.black.context.close();
});

test('no "connection lost" before signing in: the entry screen reports no connection, online once entered, nothing again after signing out', { skip: SKIP || false }, async () => {
  const me = await player();
  await me.page.waitForSelector('#guest');
  assert.equal((await me.page.textContent('#status')).trim(), '', 'nothing to report before a connection was tried');
  assert.ok(!(await me.page.textContent('body')).includes('Connection lost'));
  await enterAsGuest(me.page);
  await me.page.waitForFunction(() => document.querySelector('#status')?.textContent === 'Online', null, { timeout: WAIT });
  await me.page.click('#signout');
  await me.page.waitForSelector('#guest', { timeout: WAIT });
  assert.equal((await me.page.textContent('#status')).trim(), '');
  assert.ok(!(await me.page.textContent('body')).includes('Connection lost'));
  await me.context.close();
});

test('resign and abort are confirmed in the page (focus on cancel, Tab kept inside, Escape cancels, focus back), never with the browser\'s confirm(); claim victory counts down instead of being offered at once', { skip: SKIP || false }, async () => {
  const white = await player();
  const black = await player();
  await enterAsGuest(white.page);
  await enterAsGuest(black.page);
  const { code } = await createBoard(white.page, { variant: 'standard', minutes: 0 });
  await joinByCode(black.page, code);
  await white.page.waitForSelector('[data-act="abort"]', { timeout: WAIT });
  const playing = () => white.page.evaluate(() => window.frontier.games.get(location.hash.split('/')[2]).status);
  // Abort: asked in the page; Escape cancels and gives focus back to the button.
  await white.page.click('[data-act="abort"]');
  await white.page.waitForSelector('#confirm[role=alertdialog][aria-modal=true]', { timeout: WAIT });
  assert.match(await white.page.textContent('#confirm-text'), /Abort this game\?/);
  assert.equal(await white.page.evaluate(() => document.activeElement.id), 'confirm-no', 'focus on cancel');
  await white.page.keyboard.press('Tab');
  assert.equal(await white.page.evaluate(() => document.activeElement.id), 'confirm-yes');
  await white.page.keyboard.press('Tab');
  assert.equal(await white.page.evaluate(() => document.activeElement.id), 'confirm-no', 'Tab stays in the dialog');
  await shot(white.page, '40-confirm-abort');
  await white.page.keyboard.press('Escape');
  await white.page.waitForSelector('#confirm', { state: 'detached', timeout: WAIT });
  assert.equal(await white.page.evaluate(() => document.activeElement?.dataset.act), 'abort', 'focus back on the button');
  assert.equal(await playing(), 'playing');
  // Cancel by its button: still playing. No claim yet: a countdown stands in its place.
  await white.page.click('[data-act="abort"]');
  await confirmInPage(white.page, false);
  assert.equal(await playing(), 'playing');
  assert.equal(await white.page.locator('[data-act="claim_victory"]').count(), 0, 'no claim while the opponent was just here');
  assert.match(await white.page.textContent('#claim-wait'), /Claim victory possible in [45]:\d\d/);
  await clickMove(white.page, black.page, 'e2e4');
  await clickMove(black.page, white.page, 'e7e5');
  // Resign: a frame redrawing the game meanwhile leaves the question open; confirmed, it ends.
  await white.page.click('[data-act="resign"]');
  await white.page.waitForSelector('#confirm', { timeout: WAIT });
  assert.match(await white.page.textContent('#confirm-text'), /Resign this game\?/);
  await black.page.click('[data-act="offer_draw"]');
  await white.page.waitForSelector('.draw-offer', { timeout: WAIT });
  assert.equal(await white.page.locator('#confirm').count(), 1, 'still asking');
  await white.page.keyboard.press('Tab');
  await white.page.keyboard.press('Enter');
  await black.page.waitForSelector('#result', { timeout: WAIT });
  assert.match(await black.page.textContent('#result-title'), /You won — resignation/);
  assert.equal(white.page.__nativeDialogs || 0, 0, 'no browser dialog');
  await white.context.close();
  await black.context.close();
});

test('claim victory: a countdown from the opponent\'s last move, then the button, accepted by the server once the opponent is gone', { skip: SKIP || false }, async () => {
  // Its own server, whose absence limit is short: the client is told the same (a test hook,
  // kept above the server's so the first click succeeds).
  const own = await startServer(['--absence-limit', '2s', '--presence-timeout', '1s']);
  try {
    const white = await player(undefined, { at: own.base });
    const black = await player(undefined, { at: own.base });
    await white.page.evaluate(() => (window.frontier.claimAfterMs = 5000));
    await enterAsGuest(white.page);
    await enterAsGuest(black.page);
    const { code } = await createBoard(white.page, { variant: 'standard', minutes: 0 });
    await joinByCode(black.page, code);
    await clickMove(white.page, black.page, 'e2e4');
    await clickMove(black.page, white.page, 'e7e5');
    await white.page.waitForSelector('#claim-wait', { timeout: WAIT });
    assert.equal(await white.page.locator('[data-act="claim_victory"]').count(), 0);
    const first = await white.page.textContent('#claim-wait');
    assert.match(first, /Claim victory possible in 0:0[1-5]/);
    // The countdown runs on screen.
    await white.page.waitForFunction((t) => document.querySelector('#claim-wait') && document.querySelector('#claim-wait').textContent !== t, first, { timeout: WAIT });
    await black.context.close();
    await white.page.waitForSelector('[data-act="claim_victory"]', { timeout: WAIT });
    await white.page.click('[data-act="claim_victory"]');
    await white.page.waitForSelector('#result', { timeout: WAIT });
    assert.match(await white.page.textContent('#result-title'), /You won/);
    await white.context.close();
  } finally {
    own.proc.kill('SIGTERM');
  }
});

test('dark mode darkens the board; the hidden mark stands at least 3:1 (WCAG AA, non-text) against every square of every board look, light and dark', { skip: SKIP || false }, async () => {
  const me = await player();
  const looks = await me.page.evaluate(async () => (await import('/app/js/board.js')).BOARD_LOOKS);
  assert.ok(looks.length >= 10, 'the three plain looks and the seven textured ones');
  // What the page draws: a light and a dark square and a hidden piece, as the board draws them.
  const colours = await me.page.evaluate(async (looks) => {
    const { pieceSvg } = await import('/app/js/pieces.js');
    const root = document.documentElement;
    const holder = document.createElement('div');
    holder.innerHTML = `<svg viewBox="0 0 200 100"><g class="sq light"><rect width="100" height="100"/></g><g class="sq dark"><rect x="100" width="100" height="100"/></g>${pieceSvg({ color: 'w', role: 'n', hidden: true }, 0, 0, 100)}</svg>`;
    document.body.append(holder);
    const out = {};
    for (const dark of [false, true]) {
      root.classList.toggle('dark', dark);
      for (const look of looks) {
        root.dataset.theme = look;
        const fill = (sel, prop = 'fill') => getComputedStyle(holder.querySelector(sel))[prop];
        out[`${look}/${dark ? 'dark' : 'light'}`] = {
          light: fill('.sq.light rect'),
          dark: fill('.sq.dark rect'),
          edge: fill('.hidden-mark circle.edge'),
          ring: fill('.hidden-mark circle:not(.edge)', 'stroke'),
          disc: fill('.hidden-mark circle:not(.edge)'),
          glyph: fill('.hidden-mark text'),
        };
      }
    }
    holder.remove();
    return out;
  }, looks);
  const rgb = (c) => {
    const m = String(c).match(/rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)/);
    assert.ok(m, `a colour: ${c}`);
    return m.slice(1, 4).map(Number);
  };
  const lum = (c) => {
    const [r, g, b] = rgb(c).map((v) => {
      const s = v / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const contrast = (a, b) => {
    const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
  const failures = [];
  for (const look of looks) {
    const day = colours[`${look}/light`];
    const night = colours[`${look}/dark`];
    for (const sq of ['light', 'dark']) {
      assert.ok(lum(night[sq]) < lum(day[sq]) - 0.02, `${look}: dark mode darkens its ${sq} squares (${day[sq]} → ${night[sq]})`);
    }
    for (const [scheme, c] of [['light', day], ['dark', night]]) {
      // The mark meets the square at its dark edge, inside which runs its white ring: one of
      // the two must stand 3:1 against the square; the "?" 4.5:1 against its disc.
      for (const sq of ['light', 'dark']) {
        const best = Math.max(contrast(c.edge, c[sq]), contrast(c.ring, c[sq]));
        if (!(best >= 3)) failures.push(`${look} (${scheme} mode) ${sq} square ${c[sq]}: ${best.toFixed(2)}:1`);
      }
      if (!(contrast(c.glyph, c.disc) >= 4.5)) failures.push(`${look} (${scheme} mode): the "?" on its disc`);
    }
  }
  assert.deepEqual(failures, [], 'every hidden mark at least 3:1 against its square');
  // On screen: a game's board in dark mode is drawn in the darker squares.
  await enterAsGuest(me.page);
  await createBoard(me.page, { variant: 'hidden' });
  await me.page.waitForSelector('#board .sq.light rect', { timeout: WAIT });
  const squareFill = () => me.page.evaluate(() => getComputedStyle(document.querySelector('#board .sq.light rect')).fill);
  const before = await squareFill();
  const wasDark = await me.page.evaluate(() => document.documentElement.classList.contains('dark'));
  await me.page.click('#dark');
  await me.page.waitForFunction((b) => getComputedStyle(document.querySelector('#board .sq.light rect')).fill !== b, before, { timeout: WAIT });
  const after = await squareFill();
  assert.ok(wasDark ? lum(after) > lum(before) : lum(after) < lum(before), `the board follows dark mode (${before} → ${after})`);
  await shot(me.page, '41-dark-board');
  await me.context.close();
});

test('a game record left before it loaded draws nothing on the screen the player went to (a live game keeps its own board)', { skip: SKIP || false }, async () => {
  const me = await player();
  const errors = pageErrors(me.page);
  await enterAsGuest(me.page);
  const { id } = await createBoard(me.page, { variant: 'hidden' });
  await me.page.waitForSelector('#board svg', { timeout: WAIT });
  // The record's answer is held until the player is back on the game.
  const recordId = '00000000-0000-4000-8000-000000000001';
  let release;
  const released = new Promise((r) => (release = r));
  let asked;
  const askedFor = new Promise((r) => (asked = r));
  await me.page.route((url) => url.pathname === `/api/games/${recordId}`, async (route) => {
    asked();
    await released;
    await route.fulfill({
      status: 200,
      contentType: 'application/json',
      body: JSON.stringify({
        id: recordId, variant: 'standard', rated: false, result: '1-0', outcome: 'white-resign',
        white: { name: 'White' }, black: { name: 'Black' }, moves: [], final_fen: 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1',
      }),
    });
  });
  await goHash(me.page, `#/record/${recordId}`);
  await askedFor;
  await goHash(me.page, `#/game/${id}`);
  await me.page.waitForSelector('#main.game-screen #board svg', { timeout: WAIT });
  release();
  // The record's answer is read (the page waits on it), then nothing of it may appear.
  await me.page.waitForResponse((r) => r.url().endsWith(`/api/games/${recordId}`), { timeout: WAIT }).catch(() => {});
  await me.page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  assert.equal(await me.page.locator('#r-first').count(), 0, 'no record controls on the game screen');
  assert.equal(await me.page.locator('#main.game-screen').count(), 1, 'still the game screen');
  assert.deepEqual(errors, [], 'no error thrown in the page');
  await me.context.close();
});
