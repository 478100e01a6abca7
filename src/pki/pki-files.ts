/**
 * The on-disk layout of the controller PKI and crash-safe writes to it. Each file is written to a
 * temporary name, fsynced, given its final mode (0600 for keys, 0644 for certificates, whatever the
 * umask) and renamed into place, so a reader never sees a half-written key. A set of files is staged
 * completely before the first rename: a crash during key generation or staging leaves the previous
 * state untouched, and only the short rename loop can be interrupted.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { chmod, mkdir, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';

export const PKI_FILES = {
  rootCert: 'root-ca.cert.pem',
  rootKey: 'root-ca.key.pem',
  intermediateCert: 'intermediate-ca.cert.pem',
  intermediateKey: 'intermediate-ca.key.pem',
  serverCert: 'server.cert.pem',
  serverKey: 'server.key.pem',
  /** The key that seals API session tokens for routers (base64 of 32 random bytes). */
  sessionSealKey: 'api-session-seal.key',
} as const;

export type PkiFile = keyof typeof PKI_FILES;

const KEY_MODE = 0o600;
const CERT_MODE = 0o644;
const DIR_MODE = 0o700;

function modeOf(file: PkiFile): number {
  return file.endsWith('Key') ? KEY_MODE : CERT_MODE;
}

/** Creates the PKI directory (0700) if it does not exist; an existing directory keeps its mode. */
export async function ensurePkiDirectory(dir: string): Promise<void> {
  try {
    await stat(dir);
  } catch (error) {
    if (!isNotFound(error)) throw error;
    await mkdir(dir, { recursive: true, mode: DIR_MODE });
    await chmod(dir, DIR_MODE); // mkdir's mode is filtered by the umask
  }
}

/** The file's text, or undefined when it does not exist. */
export async function readPkiFile(dir: string, file: PkiFile): Promise<string | undefined> {
  try {
    return await readFile(join(dir, PKI_FILES[file]), 'utf8');
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** Replaces the given files as one step: stage all, then rename each into place, then sync the directory. */
export async function writePkiFiles(dir: string, contents: Partial<Record<PkiFile, string>>): Promise<void> {
  const staged: Array<{ temp: string; target: string }> = [];
  try {
    for (const [file, text] of Object.entries(contents) as Array<[PkiFile, string]>) {
      const target = join(dir, PKI_FILES[file]);
      const temp = join(dir, `.${PKI_FILES[file]}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
      staged.push({ temp, target });
      await writeSynced(temp, text, modeOf(file));
    }
  } catch (error) {
    await Promise.all(staged.map(({ temp }) => unlink(temp).catch(() => undefined)));
    throw error;
  }
  for (const { temp, target } of staged) await rename(temp, target);
  await syncDirectory(dir);
}

async function writeSynced(path: string, text: string, mode: number): Promise<void> {
  // O_EXCL: never write through a pre-existing file or symlink at the temporary name.
  const handle = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, mode);
  try {
    await handle.chmod(mode);
    await handle.writeFile(text, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
}

// Makes the renames durable; some platforms (Windows) cannot open a directory, which is then skipped.
async function syncDirectory(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, constants.O_RDONLY);
  } catch {
    return;
  }
  try {
    await handle.sync();
  } catch {
    // fsync on a directory is unsupported on some file systems; the renames themselves are still atomic.
  } finally {
    await handle.close();
  }
}

function isNotFound(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
}
