// What upstream's smoke scenario (eXeLearning's test/load/k6/smoke.mjs with lib/config.mjs) reads, and
// how: written here from those scripts' environment, not copied from them. The same variable names with
// the same defaults, so that a run given only what `exectl prepare` printed works exactly when upstream's
// would: BASE_URL (http://localhost:8080), HOST_HEADER (the URL's host name), BENCH_USER_PREFIX
// (bench-user-), BENCH_USER_COUNT (2), BENCH_USER_DOMAIN (exelearning.net), BENCH_PASSWORD (Bench1234!),
// BENCH_PROJECTS_FILE (./test/load/data/projects.json; run.sh passes an absolute default), SMOKE_VUS (10).
//
// Each virtual user i (0-based) logs in as PREFIX + (i mod COUNT) + '@' + DOMAIN, reads project i mod M's
// metadata (owner only) and opens its Yjs WebSocket, sends one binary frame and closes after 2 s. Any
// failed login, request or socket fails the run (k6 exits 99).
import http from 'k6/http';
import ws from 'k6/ws';
import { check } from 'k6';
import { Counter } from 'k6/metrics';

const env = (name, fallback) =>
  __ENV[name] === undefined || __ENV[name] === '' ? fallback : __ENV[name];
const int = (name, fallback) => {
  const n = parseInt(env(name, ''), 10);
  return Number.isNaN(n) ? fallback : n;
};

const BASE_URL = env('BASE_URL', 'http://localhost:8080');
const HOST = env('HOST_HEADER', BASE_URL.replace(/^https?:\/\//, '').split(/[/:]/)[0]);
const WS_BASE = env('WS_BASE_URL', BASE_URL.replace(/^http/, 'ws'));
const PREFIX = env('BENCH_USER_PREFIX', 'bench-user-');
const COUNT = int('BENCH_USER_COUNT', 2);
const DOMAIN = env('BENCH_USER_DOMAIN', 'exelearning.net');
const PASSWORD = env('BENCH_PASSWORD', 'Bench1234!');
const projects = JSON.parse(open(env('BENCH_PROJECTS_FILE', './test/load/data/projects.json')));
const VUS = int('SMOKE_VUS', 10);

const loginFailed = new Counter('smoke_login_failed');
const socketFailed = new Counter('smoke_ws_failed');

export const options = {
  scenarios: {
    smoke: { executor: 'per-vu-iterations', vus: VUS, iterations: 1, maxDuration: '2m' },
  },
  thresholds: {
    smoke_login_failed: ['count==0'],
    smoke_ws_failed: ['count==0'],
    http_req_failed: ['rate==0'],
  },
};

export default function () {
  loginFailed.add(0);
  socketFailed.add(0);
  const i = __VU - 1;
  const email = `${PREFIX}${i % COUNT}@${DOMAIN}`;
  const login = http.post(`${BASE_URL}/api/auth/login`, JSON.stringify({ email, password: PASSWORD }), {
    headers: { Host: HOST, 'Content-Type': 'application/json' },
  });
  if (!check(login, { 'logged in': (r) => r.status === 200 })) {
    loginFailed.add(1);
    console.error(`vu ${i}: login of ${email} answered ${login.status}`);
    return;
  }
  const token = login.json('access_token');
  const project = projects[i % projects.length];
  const meta = http.get(`${BASE_URL}/api/v1/projects/${project.uuid}`, {
    headers: { Host: HOST, Authorization: `Bearer ${token}` },
  });
  check(meta, { 'project metadata': (r) => r.status === 200 });
  let opened = false;
  let closedByUs = false;
  const res = ws.connect(`${WS_BASE}/yjs/project-${project.uuid}?token=${token}`, { headers: { Host: HOST } }, (s) => {
    s.on('open', () => {
      opened = true;
      s.sendBinary(new Uint8Array([2, 1, 2, 3]).buffer);
      s.setTimeout(() => {
        closedByUs = true;
        s.close();
      }, 2000);
    });
  });
  if (!res || res.status !== 101 || !opened || !closedByUs) {
    socketFailed.add(1);
    console.error(`vu ${i}: socket of ${email} on ${project.uuid} failed (${res && res.status})`);
  }
}
