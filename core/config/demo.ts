import path from 'node:path';

/**
 * The config used when no file is given (PRODUCT.md §1): data in ./data, SQLite,
 * and the plugins that make a newcomer's first start useful. Later features
 * add their plugins here.
 */
export function demoConfig(): Record<string, unknown> {
  return {
    server: { host: '0.0.0.0', port: 8096, dataDir: './data' },
    database: { client: 'sqlite3' },
    plugins: {
      'live-tv': {},
      dvr: {},
      vod: { demo: true },
      'continue-watching': {},
      subtitles: {},
      web: {},
      // dist/examples, shipped in the package: found wherever the server is started from.
      [path.resolve(__dirname, '../../examples/tuner-test-pattern')]: { channels: 3 },
    },
  };
}
