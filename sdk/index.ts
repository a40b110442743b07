/**
 * The Antenna plugin SDK: the only module a plugin imports from Antenna.
 * `import { definePlugin, coreServices } from 'antenna/sdk'`
 */
// tsyringe's decorators need the Reflect metadata API before any class is decorated.
import 'reflect-metadata';

export { definePlugin, SDK_VERSION } from './plugin.js';
export type {
  ConfigOf, Deps, Migration, PluginCommand, PluginDefinition, PluginEnv, PluginInit, ProvidedRefs, ProvidedServices, ResolvedDeps,
} from './plugin.js';
export { coreServices, createServiceRef, createExtensionPoint } from './refs.js';
export type { ConfigServiceRef, SettingsServiceRef, ServiceRef, ExtensionPointRef, PluginConfig, HostInfo } from './refs.js';
export { AppError, errors, isAppError } from './errors.js';
export { Duration, parseDuration } from './duration.js';
export { ConfigChangeSchema } from './settings.js';
export * from './services.js';
export * from './livetv.js';
export * from './media.js';
export * from './vod.js';
export * from './subtitles.js';
export { deviceCaps, isDashOnly } from './device.js';
export { hevcCodec, hevcCodecOfInit, readBoxes, type Box } from './mp4.js';
export { languageName, normalizeLanguage } from './language.js';
export type { DeviceCaps } from './device.js';
export { Type } from '@sinclair/typebox';
/** tsyringe's decorators, re-exported so a plugin and the host share one copy. */
export { inject, injectable } from 'tsyringe';
export type { Static, TSchema } from '@sinclair/typebox';
export type { RouteAuth } from './http.js';
