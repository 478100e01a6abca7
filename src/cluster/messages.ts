/** The lines the entry point prints, shared by the single-process and the cluster start. */
import type { AdminCredentials } from '../system/bootstrap.ts';

export function printAdminCredentials(admin: AdminCredentials): void {
  if (!admin.created) return;
  const password = admin.generatedPassword ?? '(as given with --admin-password)';
  process.stdout.write(`Default admin created.\n  username: ${admin.username}\n  password: ${password}\n`);
}
