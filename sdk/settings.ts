import { Type } from '@sinclair/typebox';

/** The JSON schema of a ConfigChangeResult, for the responses of routes that change settings. */
export const ConfigChangeSchema = Type.Object({
  changed: Type.Array(Type.String(), { description: 'Keys whose value changed' }),
  applied: Type.Array(Type.String(), { description: 'Keys in effect at once' }),
  restartNeeded: Type.Array(Type.String(), { description: 'Keys written to the config file that take effect at the next start' }),
  error: Type.Optional(Type.String({ description: 'Why the change could not be applied at once' })),
});
