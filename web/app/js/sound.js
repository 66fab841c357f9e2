// The game's sounds, synthesised with the Web Audio API (no recordings, nothing to
// license): short tones and filtered noise. One AudioContext, made at the first sound and
// resumed at the player's first touch (browsers start it suspended). A mute switch,
// remembered in localStorage (`frontier.muted`).

const KEY = 'frontier.muted';
let ctx = null;
/** The names of the sounds played, in order (the browser test reads them). */
export const played = [];

export function muted() {
  try {
    return JSON.parse(localStorage.getItem(KEY)) === true;
  } catch {
    return false;
  }
}

export function setMuted(on) {
  localStorage.setItem(KEY, JSON.stringify(!!on));
}

function audio() {
  const AC = window.AudioContext || window.webkitAudioContext;
  if (!AC) return null;
  if (!ctx) {
    try {
      ctx = new AC();
    } catch {
      return null;
    }
  }
  if (ctx.state === 'suspended') ctx.resume().catch(() => {});
  return ctx;
}

// A browser lets audio start only after a gesture: resume there.
for (const type of ['pointerdown', 'keydown']) {
  window.addEventListener(type, () => ctx && ctx.state === 'suspended' && ctx.resume().catch(() => {}), { passive: true });
}

/** A tone sliding from f0 to f1 Hz over `dur` seconds, fading out. */
function tone(c, at, { f0, f1 = f0, dur, type = 'sine', gain = 0.2 }) {
  const o = c.createOscillator();
  const g = c.createGain();
  o.type = type;
  o.frequency.setValueAtTime(f0, at);
  o.frequency.exponentialRampToValueAtTime(f1, at + dur);
  g.gain.setValueAtTime(gain, at);
  g.gain.exponentialRampToValueAtTime(0.001, at + dur);
  o.connect(g).connect(c.destination);
  o.start(at);
  o.stop(at + dur + 0.02);
}

/** White noise through a low-pass filter, fading out over `dur` seconds. */
function noise(c, at, { dur, gain = 0.3, cutoff = 2000 }) {
  const buffer = c.createBuffer(1, Math.ceil(c.sampleRate * dur), c.sampleRate);
  const data = buffer.getChannelData(0);
  for (let i = 0; i < data.length; i++) data[i] = Math.random() * 2 - 1;
  const src = c.createBufferSource();
  src.buffer = buffer;
  const filter = c.createBiquadFilter();
  filter.type = 'lowpass';
  filter.frequency.setValueAtTime(cutoff, at);
  const g = c.createGain();
  g.gain.setValueAtTime(gain, at);
  g.gain.exponentialRampToValueAtTime(0.001, at + dur);
  src.connect(filter).connect(g).connect(c.destination);
  src.start(at);
}

const SOUNDS = {
  move: (c, at) => tone(c, at, { f0: 520, f1: 360, dur: 0.07, type: 'triangle', gain: 0.3 }),
  capture: (c, at) => {
    noise(c, at, { dur: 0.1, gain: 0.35, cutoff: 3000 });
    tone(c, at, { f0: 300, f1: 140, dur: 0.12, type: 'square', gain: 0.1 });
  },
  check: (c, at) => {
    tone(c, at, { f0: 880, dur: 0.1, type: 'sawtooth', gain: 0.08 });
    tone(c, at + 0.12, { f0: 1175, dur: 0.14, type: 'sawtooth', gain: 0.08 });
  },
  explosion: (c, at) => {
    noise(c, at, { dur: 0.9, gain: 0.6, cutoff: 800 });
    tone(c, at, { f0: 110, f1: 30, dur: 0.7, gain: 0.5 });
  },
  reveal: (c, at) => [660, 880, 1320].forEach((f, i) => tone(c, at + i * 0.06, { f0: f, dur: 0.12, gain: 0.1 })),
  start: (c, at) => [392, 523, 659].forEach((f, i) => tone(c, at + i * 0.1, { f0: f, dur: 0.18, type: 'triangle', gain: 0.2 })),
  end: (c, at) => [659, 523, 392, 262].forEach((f, i) => tone(c, at + i * 0.12, { f0: f, dur: 0.22, type: 'triangle', gain: 0.2 })),
  lowtime: (c, at) => [0, 0.18].forEach((d) => tone(c, at + d, { f0: 1400, dur: 0.08, type: 'square', gain: 0.06 })),
};

/** Plays a sound by name unless muted. */
export function playSound(name) {
  if (muted() || !SOUNDS[name]) return;
  const c = audio();
  if (!c) return;
  played.push(name);
  SOUNDS[name](c, c.currentTime + 0.01);
}
