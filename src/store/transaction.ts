/** Transactions are the store's (store.ts): `store.write(async (tx) => …)`. */
export type { Tx } from './store.ts';
