/**
 * The administration dashboard (#/admin/<screen>), for administrators only:
 * the app loads this chunk only for them. Each screen is one entry of
 * SCREENS; the admin screens of later features (channels, access keys,
 * series rules) join the dashboard by adding theirs.
 */
import './admin.css';
import type { FunctionComponent } from 'preact';
import { href } from '../../router.js';
import { useTitle } from '../../ui.js';
import { ChannelsScreen } from './channels.js';
import { AccessKeysScreen } from './access-keys.js';
import { JobsScreen } from './jobs.js';
import { LibrariesScreen } from './libraries.js';
import { LogsScreen } from './logs.js';
import { SettingsScreen } from './settings.js';
import { SourcesScreen } from './sources.js';
import { UsersScreen } from './users.js';

export interface AdminScreen {
  /** #/admin/<path> */
  path: string;
  label: string;
  view: FunctionComponent;
}

export const SCREENS: AdminScreen[] = [
  { path: 'users', label: 'Users', view: UsersScreen },
  { path: 'libraries', label: 'Libraries', view: LibrariesScreen },
  { path: 'sources', label: 'Live TV sources', view: SourcesScreen },
  { path: 'channels', label: 'Channels', view: ChannelsScreen },
  { path: 'access-keys', label: 'Access keys', view: AccessKeysScreen },
  { path: 'settings', label: 'Settings', view: SettingsScreen },
  { path: 'jobs', label: 'Jobs & tasks', view: JobsScreen },
  { path: 'logs', label: 'Logs', view: LogsScreen },
];

export default function AdminView({ screen }: { screen?: string }) {
  const current = SCREENS.find((s) => s.path === screen) ?? SCREENS[0]!;
  useTitle(`${current.label} · Administration`);
  const View = current.view;
  return (
    <div class="admin">
      <h1>Administration</h1>
      <nav class="admin-nav" aria-label="Administration">
        {SCREENS.map((s) => (
          <a key={s.path} href={href(`/admin/${s.path}`)} class={s === current ? 'active' : undefined} aria-current={s === current ? 'page' : undefined}>{s.label}</a>
        ))}
      </nav>
      <section class="admin-screen" aria-labelledby="admin-screen-title">
        <h2 id="admin-screen-title">{current.label}</h2>
        <View />
      </section>
    </div>
  );
}
