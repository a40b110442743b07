/**
 * Requests Fastify rejects before routing (an over-long path parameter, a
 * malformed %-escape) still answer the one error body, without echoing the URL.
 */
import t from 'tap';
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
