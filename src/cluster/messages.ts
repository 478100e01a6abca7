/** What the entry point prints, and the messages between the cluster primary and its workers. */
import type { AdminCredentials } from '../system/bootstrap.ts';

export function printAdminCredentials(admin: AdminCredentials): void {
  if (!admin.created) return;
  const password = admin.generatedPassword ?? '(as given with --admin-password)';
  process.stdout.write(`Default admin created.\n  username: ${admin.username}\n  password: ${password}\n`);
}

/**
 * The environment variable that tells a worker its part in the start: `first` does the once-per-start work,
 * `after-first` waits for it before opening the store, `replacement` (a worker started after one died) neither.
 */
export const START_ROLE_ENV = 'PORTCULLIS_WORKER_START';

export type WorkerMessage =
  | { type: 'waiting' }
  | { type: 'prepared' }
  | { type: 'listening'; origin: string; port: number }
  | { type: 'gone-dropped'; origin: string };

export type PrimaryMessage =
  | { type: 'prepared' }
  | { type: 'announce'; workers: number }
  | { type: 'worker-gone'; origin: string };
