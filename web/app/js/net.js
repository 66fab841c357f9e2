// The client's two channels to the gateway: the HTTP API (accounts, dashboard) and the
// WebSocket (everything else), with reconnection by backoff and resumption of every open
// game by version (docs/protocol.md, "Versions, reconnecting and resuming").

/** An HTTP error with the API's code. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/**
 * Calls the HTTP API; resolves to the JSON body, rejects with an ApiError. `token`: sent as
 * `Authorization: Bearer` (the account's own endpoints).
 */
export async function api(path, { method = 'GET', body, token } = {}) {
  let response;
  const headers = body ? { 'content-type': 'application/json' } : {};
  if (token) headers.authorization = `Bearer ${token}`;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body ? JSON.stringify(body) : undefined,
    });
  } catch {
    throw new ApiError(0, 'network', 'network');
  }
  const text = await response.text();
  let value = null;
  try {
    value = text ? JSON.parse(text) : null;
  } catch {
    value = text;
  }
  if (!response.ok) {
    const e = (value && value.error) || {};
    throw new ApiError(response.status, e.code || 'internal', e.message || response.statusText);
  }
  return value;
}

/**
 * One WebSocket session. `onFrame(frame)` gets every server frame; `onStatus(status)`
 * gets 'connecting' | 'online' | 'offline' | 'auth-failed'. After every (re)connection and
 * authentication it calls `onReady()`, where the app re-opens its games.
 */
export class Connection {
  constructor({ token, onFrame, onStatus, onReady }) {
    this.token = token;
    this.onFrame = onFrame;
    this.onStatus = onStatus;
    this.onReady = onReady;
    this.ws = null;
    this.ready = false;
    this.queue = [];
    this.attempt = 0;
    this.counter = 0;
    this.stopped = false;
    this.pending = new Map();
    this.connect();
  }

  /** A fresh message id (the duplicate key of game actions). */
  nextId(prefix = 'm') {
    this.counter += 1;
    return `${prefix}${Date.now().toString(36)}${this.counter}`;
  }

  connect() {
    if (this.stopped) return;
    this.onStatus('connecting');
    const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws/v1`;
    const ws = new WebSocket(url);
    this.ws = ws;
    ws.onmessage = (e) => {
      let frame;
      try {
        frame = JSON.parse(e.data);
      } catch {
        return;
      }
      if (frame.type === 'welcome') {
        ws.send(JSON.stringify({ type: 'auth', id: 'auth', token: this.token }));
        return;
      }
      if (frame.type === 'authenticated') {
        this.ready = true;
        this.attempt = 0;
        this.onStatus('online');
        this.onReady();
        const queued = this.queue;
        this.queue = [];
        for (const m of queued) ws.send(JSON.stringify(m));
        return;
      }
      if (frame.type === 'error' && frame.id === 'auth') {
        this.stopped = true;
        this.onStatus('auth-failed', frame.code);
        ws.close();
        return;
      }
      const waiter = frame.id && this.pending.get(frame.id);
      if (waiter) {
        this.pending.delete(frame.id);
        waiter(frame);
      }
      this.onFrame(frame);
    };
    ws.onclose = (e) => {
      this.ready = false;
      if (this.stopped) return;
      this.onStatus('offline', e.code);
      // Backoff with jitter: 0.5 s doubling to at most 10 s.
      const delay = Math.min(10000, 500 * 2 ** this.attempt) * (0.75 + Math.random() * 0.5);
      this.attempt += 1;
      setTimeout(() => this.connect(), delay);
    };
  }

  /** Sends `message` (queued until authenticated); resolves with the frame answering its id. */
  send(message) {
    const id = message.id || this.nextId(message.type[0]);
    const m = { ...message, id };
    const answer = new Promise((resolve) => this.pending.set(id, resolve));
    if (this.ready && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(m));
    else this.queue.push(m);
    return answer;
  }

  /** Sends without waiting for an answer (re-opening games on reconnect). */
  post(message) {
    if (this.ready && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  /** Drops the connection (a test of resilience, or a log-out). */
  drop() {
    if (this.ws) this.ws.close();
  }

  stop() {
    this.stopped = true;
    if (this.ws) this.ws.close();
  }
}
