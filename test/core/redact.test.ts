/**
 * The one rule set for secrets in logs and messages (core/redact.ts): the three
 * forms providers put credentials in (`user:pass@`, the query, the path), and
 * the values a caller knows to be secret.
 */
import t from 'tap';
import { makeRedactor, redact, secretsIn } from '../../core/redact.js';

t.test('the three forms of provider credentials are redacted', async (t) => {
  const cases: [string, string, string[]][] = [
    ['http://bob:s3cr3t@iptv.example:8080/live/1.ts', 'http://***@iptv.example:8080/live/1.ts', ['bob', 's3cr3t']],
    ['http://iptv.example/get.php?username=bob&password=s3cr3t&type=m3u_plus', 'http://iptv.example/get.php?username=***&password=***&type=m3u_plus', ['bob', 's3cr3t']],
    ['http://iptv.example:8080/live/bob/s3cr3t/1234.ts', 'http://iptv.example:8080/live/***/***/1234.ts', ['bob', 's3cr3t']],
    ['http://iptv.example:8080/movie/bob/s3cr3t/77.mkv', 'http://iptv.example:8080/movie/***/***/77.mkv', ['bob', 's3cr3t']],
    ['https://iptv.example/series/bob/s3cr3t/5.mp4', 'https://iptv.example/series/***/***/5.mp4', ['bob', 's3cr3t']],
    ['http://iptv.example:8080/timeshift/bob/s3cr3t/60/2024-01-01:10-00/9.ts', 'http://iptv.example:8080/timeshift/***/***/60/2024-01-01:10-00/9.ts', ['bob', 's3cr3t']],
    ['http://iptv.example:8080/bob/s3cr3t/1234', 'http://iptv.example:8080/***/***/1234', ['bob', 's3cr3t']],
    ['http://iptv.example:8080/bob/s3cr3t/1234.m3u8?x=1', 'http://iptv.example:8080/***/***/1234.m3u8?x=1', ['bob', 's3cr3t']],
    ["Opening 'http://iptv.example/live/bob/s3cr3t/1.ts' for reading", "Opening 'http://iptv.example/live/***/***/1.ts' for reading", ['bob', 's3cr3t']],
  ];
  for (const [input, expected, secrets] of cases) {
    t.equal(redact(input), expected, input);
    t.strictSame(secretsIn(input).filter((s) => secrets.includes(s)).sort(), [...secrets].sort(), `${input}: its secrets are found`);
  }
  // What is not a credential stays readable.
  for (const plain of ['http://iptv.example/streams/news/hd.m3u8', 'http://cdn.example/hls/abc/index.m3u8', '/watch/live/12/seg-1.m4s', 'http://iptv.example/channel/12']) {
    t.equal(redact(plain), plain, `${plain} is left alone`);
  }
});

t.test('a known secret is redacted wherever it stands alone', async (t) => {
  // The source's own credentials (from its playlist URL) in a stream URL of another shape.
  const r = makeRedactor(['tv', 'pa55word']);
  t.equal(r('http://cdn.example/hls/tv/pa55word/index.m3u8'), 'http://cdn.example/hls/***/***/index.m3u8');
  t.equal(r('GET /stream?u=tv&p=pa55word'), 'GET /stream?u=***&p=***');
  t.equal(r('tvg-id="x" tv1 pa55words'), 'tvg-id="x" tv1 pa55words', 'not inside longer words');
  t.equal(makeRedactor(['p@ss word'])('http://h/x/p%40ss%20word/y.txt and p@ss word'), 'http://h/x/***/y.txt and ***', 'URL-encoded too');
  t.equal(makeRedactor(['a+b(c)'])('x a+b(c) y'), 'x *** y', 'regex characters in a secret are literal');
});
