// Runs a command with a private PostgreSQL cluster (test/support/postgres.ts) whose URL is in
// PORTCULLIS_TEST_DATABASE_URL: the test harness then gives every controller it starts a fresh database there.
// Usage: node --import tsx scripts/with-postgres.ts <command> [args...]
import { spawn } from 'node:child_process';
import { startTestPostgres } from '../test/support/postgres.ts';

const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error('usage: with-postgres.ts <command> [args...]');
  process.exit(2);
}
const server = await startTestPostgres();
let code = 1;
try {
  code = await new Promise<number>((resolve) => {
    const child = spawn(command, args, { stdio: 'inherit', env: { ...process.env, PORTCULLIS_TEST_DATABASE_URL: server.url } });
    child.on('exit', (status, signal) => resolve(status ?? (signal ? 1 : 0)));
  });
} finally {
  await server.stop();
}
process.exit(code);
