/** Sign in: username and password; the server's message on failure (wrong password, inactive account, too many tries). */
import { useState } from 'preact/hooks';
import { signIn } from '../api.js';
import { describeError, useTitle } from '../ui.js';

export function LoginView({ notice, onSignedIn }: { notice?: string; onSignedIn(): void }) {
  useTitle('Sign in');
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    if (busy) return;
    setBusy(true);
    setError(undefined);
    try {
      await signIn(username.trim(), password);
      onSignedIn();
    } catch (err) {
      setError(describeError(err));
      setBusy(false);
    }
  };

  return (
    <div class="login-page">
      <form class="login-card" onSubmit={submit} aria-labelledby="login-title">
        <h1 id="login-title" class="brand-large">Antenna</h1>
        <p class="muted">Sign in to watch live TV, recordings and your libraries.</p>
        {notice && !error && <p class="notice" role="status">{notice}</p>}
        {error && <p class="error-note" role="alert" id="login-error">{error}</p>}
        <label>
          Username
          <input name="username" autocomplete="username" autoCapitalize="none" spellcheck={false} required autoFocus
            value={username} onInput={(e) => setUsername(e.currentTarget.value)} aria-describedby={error ? 'login-error' : undefined} />
        </label>
        <label>
          Password
          <input name="password" type="password" autocomplete="current-password" required
            value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        </label>
        <button class="button primary" type="submit" disabled={busy}>{busy ? 'Signing in…' : 'Sign in'}</button>
      </form>
    </div>
  );
}
