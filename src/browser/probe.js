// The probe, run in the app's page by one Runtime.evaluate: what the editor's front end does to open a
// project, timed with performance.now(). Every step is bounded by what is left of the budget, so a paused
// app gives a named failed step, not a hang. Returns {login_ms, open_ms, sync_ms} or, with the times of
// the steps that finished, {failed: "step: why"}. Messages never carry the password or the token.
async (a) => {
  const end = performance.now() + a.budget_ms;
  const left = () => Math.max(1, end - performance.now());
  const out = {};
  class Failed extends Error {
    constructor(step, why) { super(why); this.step = step; }
  }
  const request = async (step, what, path, init) => {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), left());
    try {
      const r = await fetch(a.base + path, { ...init, signal: ctl.signal, cache: 'no-store' });
      const body = await r.arrayBuffer();
      return { status: r.status, body };
    } catch (e) {
      throw new Failed(step, ctl.signal.aborted
        ? `${what} gave no answer by the probe's timeout`
        : `${what}: ${e && e.name ? e.name : 'error'} ${e && e.message ? e.message : ''}`.trim());
    } finally {
      clearTimeout(timer);
    }
  };
  const excerpt = (buf) => new TextDecoder().decode(buf).slice(0, 200);
  // y-protocols' sync messages: [messageSync=0, step1=0, varUint8Array(state vector of an empty doc)]
  // and [0, step2=1, varUint8Array(empty update: 0 structs, 0 deletes)].
  const STEP1 = [0, 0, 1, 0];
  const STEP2 = [0, 1, 2, 0, 0];
  const same = (data, want) => {
    if (!(data instanceof ArrayBuffer) || data.byteLength !== want.length) return false;
    const b = new Uint8Array(data);
    return want.every((x, i) => b[i] === x);
  };
  const sockets = [];
  // A socket of the project's room, open (or the step fails with the server's close code).
  const open = (what) => new Promise((resolve, reject) => {
    const ws = new WebSocket(a.yjs);
    ws.binaryType = 'arraybuffer';
    sockets.push(ws);
    const timer = setTimeout(() => reject(new Failed('sync', `${what} did not open by the probe's timeout`)), left());
    ws.addEventListener('open', () => { clearTimeout(timer); resolve(ws); });
    ws.addEventListener('close', (e) => {
      clearTimeout(timer);
      reject(new Failed('sync', `${what} closed by the server: ${e.code} ${e.reason}`.trim()));
    });
  });
  let step = 'login';
  try {
    // login: the login form's POST, as JSON.
    let t = performance.now();
    const login = await request('login', 'POST /api/auth/login', '/api/auth/login', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ email: a.email, password: a.password }),
      credentials: 'same-origin',
    });
    if (login.status < 200 || login.status > 299) {
      throw new Failed('login', `POST /api/auth/login answered ${login.status}: ${excerpt(login.body)}`);
    }
    let token;
    try { token = JSON.parse(new TextDecoder().decode(login.body)).access_token; } catch (e) { token = undefined; }
    if (!token) throw new Failed('login', 'POST /api/auth/login answered without an access_token');
    out.login_ms = performance.now() - t;

    step = 'open';
    // open: the project's metadata (403 is a collaborator's answer: the route is the owner's, contract
    // §1), then its Yjs document (404 is a project with no snapshot yet: an empty document).
    t = performance.now();
    const auth = { headers: { Authorization: `Bearer ${token}` } };
    const meta = await request('open', 'GET /api/v1/projects/:uuid', `/api/v1/projects/${a.uuid}`, auth);
    if ((meta.status < 200 || meta.status > 299) && meta.status !== 403) {
      throw new Failed('open', `GET /api/v1/projects/:uuid answered ${meta.status}: ${excerpt(meta.body)}`);
    }
    const doc = await request('open', 'GET /api/projects/uuid/:uuid/yjs-document', `/api/projects/uuid/${a.uuid}/yjs-document`, auth);
    if (doc.status !== 200 && doc.status !== 404) {
      throw new Failed('open', `GET /api/projects/uuid/:uuid/yjs-document answered ${doc.status}: ${excerpt(doc.body)}`);
    }
    out.open_ms = performance.now() - t;

    // sync: the app is a relay that never decodes Yjs (contract §2), so the sync step 2 comes from
    // another client in the room. The page keeps one (a second tab of the same user, not timed) that
    // answers sync step 1 as y-websocket does; then the timed socket opens, sends its step 1 and waits
    // for the step 2 relayed back: the server's upgrade, authorisation, join and two relays (one more
    // round when the peer joined after the step 1).
    step = 'sync';
    a.yjs = a.yjs_base + encodeURIComponent(token);
    const peer = await open('the peer socket');
    peer.addEventListener('message', (e) => { if (same(e.data, STEP1)) peer.send(new Uint8Array(STEP2)); });
    t = performance.now();
    const ws = await open('the socket');
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Failed('sync', `no sync step 2 by the probe's timeout`)), left());
      ws.addEventListener('message', (e) => {
        if (same(e.data, STEP2)) { clearTimeout(timer); resolve(); return; }
        // Each socket joins its room once the server's async authorisation is done: a step 1 sent before
        // the peer joined reached nobody. The server asks the room to resync when a member joins
        // (trigger-resync, contract §2) and the editor sends its step 1 again; so does the probe.
        if (typeof e.data === 'string' && e.data.includes('"trigger-resync"')) ws.send(new Uint8Array(STEP1));
      });
      ws.addEventListener('close', (e) => {
        clearTimeout(timer);
        reject(new Failed('sync', `the socket closed by the server before the sync: ${e.code} ${e.reason}`.trim()));
      });
      ws.send(new Uint8Array(STEP1));
    });
    out.sync_ms = performance.now() - t;
  } catch (e) {
    out.failed = e instanceof Failed ? `${e.step}: ${e.message}` : `${step}: ${String(e)}`;
  } finally {
    for (const s of sockets) { try { s.close(1000); } catch (e) { /* closed already */ } }
  }
  return out;
}
