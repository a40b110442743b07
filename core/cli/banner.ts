import os from 'node:os';

/** Addresses other devices on the network can use, when the server listens on every interface. */
function lanUrls(host: string, port: number): string[] {
  if (host !== '0.0.0.0' && host !== '::') return [];
  const urls: string[] = [];
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) urls.push(`http://${a.address}:${port}/`);
  }
  return urls.slice(0, 4);
}

/**
 * What a person starting the server needs: the URL to open and, on the first
 * start, the admin's generated password (shown this once).
 */
export function startupBanner(options: { version: string; url: string; host: string; port: number; adminPassword?: string }): string {
  const lines = ['', `  Antenna ${options.version} is running.`, `  Open ${options.url}/ in a browser.`];
  const others = lanUrls(options.host, options.port);
  if (others.length) lines.push(`  From other devices: ${others.join('  ')}`);
  if (options.adminPassword) {
    lines.push(`  Sign in as admin with password: ${options.adminPassword}`);
    lines.push(`  (shown once; change it on the Account page or with 'antenna user passwd admin')`);
  }
  return lines.join('\n') + '\n\n';
}
