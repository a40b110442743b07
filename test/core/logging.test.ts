import t from 'tap';
import { Writable } from 'node:stream';
import pino from 'pino';
import { createTestHost, TEST_ADMIN_PASSWORD } from '../../sdk/testing.js';

/** Every log line the server writes, at the most verbose level. */
function capture() {
  const lines: string[] = [];
  const stream = new Writable({ write(chunk, _enc, cb) { lines.push(...String(chunk).split('\n').filter(Boolean)); cb(); } });
  return { logger: pino({ level: 'trace' }, stream), lines };
}

t.test('tokens, api keys and passwords never reach a log line', async (t) => {
  const { logger, lines } = capture();
  const host = await createTestHost({ logger });
  t.teardown(() => host.close());
  const token = host.adminToken;
  await host.inject({ method: 'GET', url: '/me', headers: host.authHeaders });
  await host.inject({ method: 'GET', url: `/me?api_key=${token}` });
  await host.inject({ method: 'GET', url: `/nowhere?api_key=${token}&key=abc.def` });
  await host.inject({ method: 'POST', url: '/login', payload: { username: 'admin', password: 'wrong-password-xyz' } });
  await host.inject({ method: 'PUT', url: '/api/user/me/password', headers: host.authHeaders, payload: { current_password: TEST_ADMIN_PASSWORD, new_password: 'brand-new-password-1' } });
  t.ok(lines.length >= 5, `the requests were logged (${lines.length} lines)`);
  const all = lines.join('\n');
  t.notOk(all.includes(token), 'no token');
  t.notOk(all.includes(token.split('.')[2]), 'not even the signature');
  t.notOk(all.includes('abc.def'), 'no signed media key');
  t.notOk(all.includes('wrong-password-xyz'), 'no attempted password');
  t.notOk(all.includes(TEST_ADMIN_PASSWORD), 'no current password');
  t.notOk(all.includes('brand-new-password-1'), 'no new password');
  t.ok(all.includes('api_key=***'), 'the redacted query is still logged');
  for (const line of lines) t.doesNotThrow(() => JSON.parse(line), 'one JSON object per line');
});
