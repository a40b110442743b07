/**
 * The web plugin's file serving, without a browser: the page is public and
 * carries a strict CSP; hashed files are cached for good; brotli, gzip or
 * nothing by Accept-Encoding with the same bytes once decoded; ETags revalidate;
 * no path trick reaches a file outside the build; the API still wants a token.
 */
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import t from 'tap';
import { createTestHost } from '../../../sdk/testing.js';

t.test('the web app is served from memory, safely', async (t) => {
  const started = Date.now();
  const host = await createTestHost({ plugins: { web: {} } });
  t.teardown(() => host.close());
  t.comment(`host with web and its dependencies started in ${Date.now() - started} ms`);

  const page = await host.inject({ method: 'GET', url: '/' });
  t.equal(page.statusCode, 200, 'GET / needs no token');
  t.match(page.headers['content-type'], /^text\/html/);
  const csp = String(page.headers['content-security-policy'] ?? '');
  t.match(csp, /script-src 'self'/, 'the page has a Content-Security-Policy');
  t.match(csp, /connect-src 'self'/);
  t.match(csp, /frame-ancestors 'none'/);
  t.equal(page.headers['cache-control'], 'no-cache', 'the page is revalidated on every load');
  t.equal(page.headers['x-content-type-options'], 'nosniff');

  const script = /src="\/web\/(app-[A-Za-z0-9]+\.js)"/.exec(page.body)?.[1];
  t.ok(script, 'the page loads the hashed app script');
  const style = /href="\/web\/(app-[A-Za-z0-9]+\.css)"/.exec(page.body)?.[1];
  t.ok(style, 'and the hashed stylesheet');
  if (!script || !style) return;

  await t.test('hashed files are immutable, in the encoding asked for', async (t) => {
    const url = `/web/${script}`;
    const plain = await host.inject({ method: 'GET', url, headers: { 'accept-encoding': '' } });
    t.equal(plain.statusCode, 200);
    t.equal(plain.headers['cache-control'], 'public, max-age=31536000, immutable');
    t.match(plain.headers['content-type'], /^text\/javascript/);
    t.notOk(plain.headers['content-encoding'], 'no Accept-Encoding: identity');
    t.equal(Number(plain.headers['content-length']), plain.rawPayload.length);
    t.match(plain.headers.vary, /accept-encoding/i);
    t.notOk(plain.headers['content-security-policy'], 'the CSP belongs to the page');

    const br = await host.inject({ method: 'GET', url, headers: { 'accept-encoding': 'gzip, deflate, br' } });
    t.equal(br.headers['content-encoding'], 'br', 'brotli when offered');
    t.ok(br.rawPayload.length < plain.rawPayload.length, 'and smaller');
    t.same(brotliDecompressSync(br.rawPayload), plain.rawPayload, 'brotli decodes to the same bytes');

    const gzip = await host.inject({ method: 'GET', url, headers: { 'accept-encoding': 'gzip' } });
    t.equal(gzip.headers['content-encoding'], 'gzip');
    t.same(gunzipSync(gzip.rawPayload), plain.rawPayload, 'gzip decodes to the same bytes');

    const refused = await host.inject({ method: 'GET', url, headers: { 'accept-encoding': 'br;q=0, gzip' } });
    t.equal(refused.headers['content-encoding'], 'gzip', 'q=0 refuses an encoding');

    const css = await host.inject({ method: 'GET', url: `/web/${style}`, headers: { 'accept-encoding': 'br' } });
    t.equal(css.statusCode, 200);
    t.match(css.headers['content-type'], /^text\/css/);
    t.equal(css.headers['cache-control'], 'public, max-age=31536000, immutable');
  });

  await t.test('ETags revalidate', async (t) => {
    for (const url of ['/', `/web/${script}`, '/favicon.svg']) {
      const first = await host.inject({ method: 'GET', url, headers: { 'accept-encoding': 'br' } });
      const etag = first.headers.etag as string;
      t.match(etag, /^"[^"]+"$/, `${url} has an ETag`);
      const again = await host.inject({ method: 'GET', url, headers: { 'if-none-match': etag, 'accept-encoding': 'br' } });
      t.equal(again.statusCode, 304, `${url}: If-None-Match → 304`);
      t.equal(again.rawPayload.length, 0, 'with no body');
      t.equal(again.headers.etag, etag);
      const listed = await host.inject({ method: 'GET', url, headers: { 'if-none-match': `"other", W/${etag}`, 'accept-encoding': 'br' } });
      t.equal(listed.statusCode, 304, `${url}: a weak tag in a list matches too`);
      const plain = await host.inject({ method: 'GET', url, headers: { 'if-none-match': etag } });
      t.equal(plain.statusCode, 200, `${url}: the brotli tag does not match the uncompressed file`);
      t.not(plain.headers.etag, etag, 'each encoding has its own tag');
      const stale = await host.inject({ method: 'GET', url, headers: { 'if-none-match': '"something-else"' } });
      t.equal(stale.statusCode, 200, `${url}: another ETag gets the file`);
    }
  });

  await t.test('HEAD', async (t) => {
    const plain = await host.inject({ method: 'GET', url: `/web/${script}` });
    const head = await host.inject({ method: 'HEAD', url: `/web/${script}` });
    t.equal(head.statusCode, 200);
    t.equal(head.rawPayload.length, 0, 'no body');
    t.equal(head.headers['content-length'], plain.headers['content-length'], 'the length a GET would send');
    t.equal(head.headers.etag, plain.headers.etag);
    const index = await host.inject({ method: 'HEAD', url: '/' });
    t.equal(index.statusCode, 200);
    t.ok(index.headers['content-security-policy']);
  });

  await t.test('unknown files and path tricks are JSON errors, never a file outside the build', async (t) => {
    const missing = await host.inject({ method: 'GET', url: '/web/app-ZZZZZZZZ.js' });
    t.equal(missing.statusCode, 404);
    t.match(missing.json(), { error: String });

    const tricks = [
      '/web/..%2fpackage.json', '/web/..%2F..%2F..%2Fpackage.json', '/web/%2e%2e/index.ts', '/web/%2e%2e%2findex.js',
      '/web/../../package.json', '/web/..%5cindex.js', '/web/.%2e/.%2e/package.json', '/web/%00', '/web/index.html%00.js',
      '/web/%E0%A4%A', `/web/${'a'.repeat(5000)}.js`, '/web/', '/web', '/web/.',
      '/web/app.js.br', `/web/${script}.br`, `/web/${script}.gz`,
    ];
    for (const url of tricks) {
      const res = await host.inject({ method: 'GET', url });
      t.ok([400, 404, 414].includes(res.statusCode), `${url.slice(0, 60)} → ${res.statusCode}`);
      t.match(res.headers['content-type'], /application\/json/, 'a JSON body');
      t.match(res.json(), { error: String }, 'with an error message');
      t.notMatch(res.body, /"name":\s*"antenna"|import |definePlugin/, 'and nothing of a source file');
    }
    // Dot segments resolve as in a browser: /web/.. is the page at /, not a listing or a file above the build.
    const up = await host.inject({ method: 'GET', url: '/web/..' });
    t.equal(up.body, page.body, '/web/.. is the page itself');
    const long = await host.inject({ method: 'GET', url: `/web/${'a'.repeat(5000)}.js` });
    t.notMatch(long.body, /aaaaaaaaaa/, 'the error does not echo a long name');
  });

  await t.test('the API still wants a token', async (t) => {
    const anonymous = await host.inject({ method: 'GET', url: '/channels' });
    t.equal(anonymous.statusCode, 401);
    t.match(anonymous.json(), { error: String });
    const signedIn = await host.inject({ method: 'GET', url: '/channels', headers: host.authHeaders });
    t.equal(signedIn.statusCode, 200);
    const version = await host.inject({ method: 'GET', url: '/api/version' });
    t.equal(version.statusCode, 200, 'the version is public (the account page shows it)');
  });

  await t.test('the files are in the OpenAPI document, as public', async (t) => {
    const doc = (await host.inject({ method: 'GET', url: '/api/docs/json', headers: host.authHeaders })).json();
    for (const path of ['/', '/favicon.svg', '/web/{file}']) {
      t.strictSame(doc.paths?.[path]?.get?.security, [], `GET ${path} is documented as public`);
      t.strictSame(doc.paths?.[path]?.get?.tags, ['web']);
    }
  });

  await t.test('an unknown config key stops start-up', async (t) => {
    await t.rejects(createTestHost({ plugins: { web: { theme: 'light' } } }), /theme/);
  });
});
