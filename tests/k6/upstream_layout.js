// The membership upstream's one-user-per-project k6 scripts assume, checked with k6 itself: virtual
// user i (0-based: __VU - 1) logs in as account i mod BENCH_USER_COUNT (REST login through the front
// door) and opens the WebSocket of project i mod M of projects.json. A socket counts as held when the
// server has not closed it HOLD_MS (default 1000) after the upgrade; the app answers 101 and refuses
// with a close (4001/4003) right after, so a close before then is a refusal. Unlike upstream's, these
// thresholds count those closes: k6 exits non-zero (99) when any socket was refused.
//
// Env, as `exectl prepare` prints it: BASE_URL, HOST_HEADER (single: Traefik routes by Host),
// BENCH_USER_COUNT, BENCH_PASSWORD, BENCH_PROJECTS_FILE; optional BENCH_USER_PREFIX and BENCH_USER_DOMAIN
// (the email is PREFIX + n + '@' + DOMAIN, as upstream builds it; default bench-user-, exelearning.net),
// VUS (default BENCH_USER_COUNT), HOLD_MS, SUMMARY_FILE (the end-of-test summary as JSON).
import http from 'k6/http';
import ws from 'k6/ws';
import { Counter } from 'k6/metrics';

const BASE_URL = (__ENV.BASE_URL || '').replace(/\/+$/, '');
const HOST_HEADER = __ENV.HOST_HEADER || '';
const USERS = parseInt(__ENV.BENCH_USER_COUNT, 10);
const PASSWORD = __ENV.BENCH_PASSWORD;
const PREFIX = __ENV.BENCH_USER_PREFIX || 'bench-user-';
const DOMAIN = __ENV.BENCH_USER_DOMAIN || 'exelearning.net';
const VUS = parseInt(__ENV.VUS || __ENV.BENCH_USER_COUNT, 10);
const HOLD_MS = parseInt(__ENV.HOLD_MS || '1000', 10);
const projects = JSON.parse(open(__ENV.BENCH_PROJECTS_FILE));

if (!BASE_URL || !(USERS > 0) || !PASSWORD || !(VUS > 0) || projects.length === 0) {
  throw new Error('needs BASE_URL, BENCH_USER_COUNT, BENCH_PASSWORD and a non-empty BENCH_PROJECTS_FILE');
}

const held = new Counter('layout_ws_held');
const refused = new Counter('layout_ws_refused'); // closed by the server within HOLD_MS
const denied = new Counter('layout_ws_4003'); // of those, with 4003 (ACCESS_DENIED)
const loginFailed = new Counter('layout_login_failed');
const upgradeFailed = new Counter('layout_ws_not_upgraded');

export const options = {
  scenarios: {
    layout: { executor: 'per-vu-iterations', vus: VUS, iterations: 1, maxDuration: '2m' },
  },
  thresholds: {
    layout_ws_held: [`count==${VUS}`],
    layout_ws_refused: ['count==0'],
    layout_ws_4003: ['count==0'],
    layout_login_failed: ['count==0'],
    layout_ws_not_upgraded: ['count==0'],
  },
};

export default function () {
  // Every counter gets a sample, so that no threshold is judged on no data.
  for (const c of [held, refused, denied, loginFailed, upgradeFailed]) c.add(0);
  const i = __VU - 1;
  const email = `${PREFIX}${i % USERS}@${DOMAIN}`;
  const project = projects[i % projects.length];
  const headers = { 'Content-Type': 'application/json' };
  if (HOST_HEADER) headers.Host = HOST_HEADER;
  const login = http.post(`${BASE_URL}/api/auth/login`, JSON.stringify({ email, password: PASSWORD }), {
    headers,
  });
  if (login.status !== 200) {
    loginFailed.add(1);
    console.error(`vu ${i}: login of ${email} answered ${login.status}`);
    return;
  }
  const token = login.json('access_token');
  const url = `${BASE_URL.replace(/^http/, 'ws')}/yjs/project-${project.uuid}?token=${token}`;
  let mine = false;
  let early = false;
  const res = ws.connect(url, { headers: HOST_HEADER ? { Host: HOST_HEADER } : {} }, (socket) => {
    socket.on('open', () => {
      socket.setTimeout(() => {
        mine = true;
        socket.close();
      }, HOLD_MS);
    });
    socket.on('close', (code) => {
      if (mine) return;
      early = true;
      refused.add(1);
      if (code === 4003) denied.add(1);
      console.warn(`vu ${i}: ${email} on project ${i % projects.length} closed early (${code})`);
    });
  });
  if (!res || res.status !== 101) {
    upgradeFailed.add(1);
  } else if (mine && !early) {
    held.add(1);
  }
}

export function handleSummary(data) {
  const count = (m) => (data.metrics[m] ? data.metrics[m].values.count : 0);
  const line =
    `layout: ${VUS} vus, ${projects.length} projects, ${USERS} accounts: held ${count('layout_ws_held')}, ` +
    `refused ${count('layout_ws_refused')} (4003: ${count('layout_ws_4003')}), ` +
    `login failed ${count('layout_login_failed')}, not upgraded ${count('layout_ws_not_upgraded')}\n`;
  const out = { stdout: line };
  if (__ENV.SUMMARY_FILE) out[__ENV.SUMMARY_FILE] = JSON.stringify(data);
  return out;
}
