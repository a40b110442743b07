import 'reflect-metadata';
export { Host, type HostOptions } from './host.js';
export { loadConfig, type LoadOptions } from './config/load.js';
export type { AntennaConfig } from './config/schema.js';
export { VERSION } from './version.js';
