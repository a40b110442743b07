/**
 * Requests Fastify rejects before routing (an over-long path parameter, a
 * malformed %-escape), and those Node's own HTTP parser refuses (a malformed
 * request, headers over 16 KB), still answer the one error body, without
 * echoing the URL.
 */
import t from 'tap';
import net from 'node:net';
import { createTestHost } from '../../sdk/testing.js';
import { expectError } from '../helpers/http.js';

t.test('errors raised before routing keep the {"error"} body', async (t) => {
  const host = await createTestHost({ plugins: { vod: { initialScan: 'skip' } } });
  t.teardown(() => host.close());
  const long = await host.inject({ method: 'GET', url: `/item/${'x'.repeat(300)}`, headers: host.authHeaders });
  expectError(t, long, 414, 'A path parameter is too long');
  t.notMatch(long.body, /xxxxxxxxxx/, 'the URL is not echoed');
  const bad = await host.inject({ method: 'GET', url: '/item/%zz', headers: host.authHeaders });
  expectError(t, bad, 400, 'Malformed URL');
});

/** Bytes sent as they are over a fresh connection; the whole answer, once the server closes it. */
function rawExchange(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.end(request));
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.on('error', reject);
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer')));
  });
}

function parse(raw: string): { statusCode: number; headers: Record<string, string>; body: string } {
  const [head, body = ''] = raw.split('\r\n\r\n');
  const [status, ...fields] = head!.split('\r\n');
  const headers = Object.fromEntries(fields.map((f) => [f.slice(0, f.indexOf(':')).toLowerCase(), f.slice(f.indexOf(':') + 1).trim()]));
  return { statusCode: Number(status!.split(' ')[1]), headers, body };
}

t.test('requests Node\'s HTTP parser refuses answer {"error"} too', async (t) => {
  const host = await createTestHost({ listen: true });
  t.teardown(() => host.close());
  const port = Number(new URL(host.url).port);
  const cases: [string, string, number][] = [
    ['a header line without a colon', 'GET /api/version HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n', 400],
    ['a malformed request line', 'GET /api/version HTTP/9.z\r\nHost: x\r\n\r\n', 400],
    ['random bytes', '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n', 400],
    ['a header with a bare CR', 'GET /api/version HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n', 400],
    ['headers over 16 KB', `GET /api/version HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
  ];
  for (const [what, request, status] of cases) {
    const res = parse(await rawExchange(port, request));
    expectError(t, res, status, undefined, what);
  }
  t.equal((await fetch(`${host.url}/api/version`)).status, 200, 'the server goes on serving');
});
