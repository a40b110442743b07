/**
 * Builds the web app (plugins/web/app) into dist/plugins/web/public: type-checks
 * it with its own tsconfig (DOM + preact JSX), bundles it with esbuild (code
 * splitting, so hls.js is a chunk loaded only by the player), writes index.html
 * pointing at the hashed files, and stores gzip and brotli copies next to each
 * file so the server never compresses on a request.
 *
 * Run by `npm run build` after tsc: `node dist/plugins/web/build.js`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const REPO = path.resolve(__dirname, '../../..');
const APP = path.join(REPO, 'plugins/web/app');
export const PUBLIC_DIR = path.join(REPO, 'dist/plugins/web/public');
/** URL prefix of the built files; index.html itself is served at `/`. */
const ASSET_PREFIX = '/web/';

async function main(): Promise<void> {
  const started = Date.now();
  // esbuild strips types without checking them; the app's own tsconfig does the checking.
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', APP], { stdio: 'inherit' });

  rmSync(PUBLIC_DIR, { recursive: true, force: true });
  mkdirSync(PUBLIC_DIR, { recursive: true });
  const result = await build({
    entryPoints: { app: path.join(APP, 'main.tsx') },
    outdir: PUBLIC_DIR,
    bundle: true,
    splitting: true,
    format: 'esm',
    minify: true,
    sourcemap: 'linked',
    target: ['chrome100', 'firefox100', 'safari15'],
    entryNames: '[name]-[hash]',
    chunkNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    publicPath: ASSET_PREFIX,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    define: { 'process.env.NODE_ENV': '"production"' },
    legalComments: 'linked',
    metafile: true,
    logLevel: 'warning',
  });

  const outputs = Object.entries(result.metafile.outputs);
  const entry = outputs.find(([, o]) => o.entryPoint?.endsWith('main.tsx'));
  if (!entry) throw new Error('esbuild produced no entry chunk');
  const script = ASSET_PREFIX + path.basename(entry[0]);
  const css = entry[1].cssBundle ? ASSET_PREFIX + path.basename(entry[1].cssBundle) : undefined;
  // A chunk loaded later (the admin dashboard) brings styles esbuild does not load: the app finds
  // them in a <meta> named after the chunk and adds them when it loads the chunk.
  const lazyCss = outputs
    .filter(([file, o]) => o.entryPoint && o !== entry[1] && o.cssBundle && file.endsWith('.js'))
    .map(([file, o]) => `<meta name="antenna-css-${path.basename(file).replace(/-[A-Z0-9]{8}\.js$/, '')}" content="${ASSET_PREFIX + path.basename(o.cssBundle!)}">`);
  const template = readFileSync(path.join(APP, 'index.html'), 'utf8');
  writeFileSync(path.join(PUBLIC_DIR, 'index.html'), template
    .replace('<!--styles-->', [...(css ? [`<link rel="stylesheet" href="${css}">`] : []), ...lazyCss].join('\n'))
    .replace('<!--script-->', `<script type="module" src="${script}"></script>`));
  writeFileSync(path.join(PUBLIC_DIR, 'favicon.svg'), readFileSync(path.join(APP, 'favicon.svg')));

  let files = 0;
  for (const name of readdirSync(PUBLIC_DIR)) {
    if (!/\.(js|css|html|svg|map|txt)$/.test(name)) continue;
    const body = readFileSync(path.join(PUBLIC_DIR, name));
    writeFileSync(path.join(PUBLIC_DIR, `${name}.gz`), gzipSync(body, { level: 9 }));
    writeFileSync(path.join(PUBLIC_DIR, `${name}.br`), brotliCompressSync(body, {
      params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length },
    }));
    files++;
  }
  console.log(`web app built: ${files} files in ${PUBLIC_DIR} (${Date.now() - started} ms)`);
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
