/**
 * The order plugins' inits run in, from the refs each init names: the owner
 * of a service or extension point before every plugin that uses it, otherwise
 * the order plugins were loaded in. A ref nobody enabled provides, and plugins
 * that use each other in a cycle, stop start-up with the plugins and refs named.
 */

export interface RefUse {
  id: string;
  kind: 'service' | 'extension-point';
  /** The owner the ref declares (SDK 1.1 refs do), for the message when it is not enabled. */
  owner?: string;
}

export interface PluginUses {
  id: string;
  /** What its inits name (core services excluded). */
  uses: RefUse[];
}

/** Throws, naming the plugin and the ref, unless an enabled plugin provides every ref used. `owners`: ref id → plugin. */
export function checkOwners(plugins: readonly PluginUses[], owners: ReadonlyMap<string, string>, enabled: ReadonlySet<string>): void {
  for (const p of plugins) {
    for (const ref of p.uses) {
      const owner = owners.get(ref.id);
      if (owner && ref.owner && owner !== ref.owner) {
        throw new Error(`plugin ${p.id} uses ${ref.id}, which names plugin ${ref.owner} as its owner, but plugin ${owner} provides it`);
      }
      if (owner) continue;
      const what = ref.kind === 'service' ? 'service' : 'extension point';
      if (ref.owner) {
        throw new Error(enabled.has(ref.owner)
          ? `plugin ${p.id}: needs ${what} ${ref.id}, which plugin ${ref.owner} does not provide`
          : `plugin ${p.id}: needs ${what} ${ref.id} of plugin ${ref.owner}, which is not enabled (list ${ref.owner} under plugins: or in ${p.id}'s dependsOn)`);
      }
      throw new Error(`plugin ${p.id}: needs ${what} ${ref.id}, which no loaded plugin provides (add its owner to dependsOn)`);
    }
  }
}

/** Plugin ids in init order (`plugins` in load order). `owners` maps each provided ref id to the plugin providing it. */
export function initOrder(plugins: readonly PluginUses[], owners: ReadonlyMap<string, string>): string[] {
  const byId = new Map(plugins.map((p) => [p.id, p]));
  checkOwners(plugins, owners, new Set(byId.keys()));

  const ordered: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  /** `path`: the plugins being visited, each with the ref that led to the next. */
  const visit = (id: string, path: { id: string; via?: string }[]) => {
    if (state.get(id) === 'done') return;
    if (state.get(id) === 'visiting') {
      const start = path.findIndex((step) => step.id === id);
      const cycle = path.slice(start).map((step) => `${step.id} (uses ${step.via})`).join(' -> ');
      throw new Error(`plugins use each other in a cycle: ${cycle} -> ${id}`);
    }
    state.set(id, 'visiting');
    for (const ref of byId.get(id)!.uses) {
      const owner = owners.get(ref.id)!;
      if (owner !== id) visit(owner, [...path, { id, via: ref.id }]);
    }
    state.set(id, 'done');
    ordered.push(id);
  };
  for (const p of plugins) visit(p.id, []);
  return ordered;
}
