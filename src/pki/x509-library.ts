/**
 * The single entry point to @peculiar/x509 for the whole project. Importing the library anywhere else
 * would skip the two things it needs before first use: the Reflect metadata polyfill (evaluated first by
 * import order) and Node's WebCrypto as its crypto provider. Every pki/ module, and tests that build
 * CSRs, import `x509` from here.
 */
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { webcrypto } from 'node:crypto';

// Node's webcrypto object implements the DOM `Crypto` interface the library is typed against.
x509.cryptoProvider.set(webcrypto as unknown as Crypto);

export { x509 };

/** Node's WebCrypto subtle interface, typed as the DOM one the library expects. */
export const subtle: SubtleCrypto = webcrypto.subtle as unknown as SubtleCrypto;
