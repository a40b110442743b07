import type { LoadedPlugin } from './loader.js';

export interface CommandInfo { usage: string; description: string; plugin: string }

/** The commands the plugins add, read from their register() alone (nothing is started): for `antenna help`. */
export function pluginCommands(plugins: LoadedPlugin[]): CommandInfo[] {
  const out: CommandInfo[] = [];
  for (const p of plugins) {
    p.def.register({
      registerExtensionPoint: () => {},
      registerInit: () => {},
      registerCommand: (command) => { out.push({ usage: command.usage ?? command.path.join(' '), description: command.description, plugin: p.def.id }); },
    });
  }
  return out;
}
