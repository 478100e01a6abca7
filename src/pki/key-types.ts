/** Key types the controller can generate for its TLS/JWT signing key (no crypto here: the config reads it). */
export type ServerKeyType = 'ec' | 'rsa';

export const SERVER_KEY_TYPES: readonly ServerKeyType[] = ['ec', 'rsa'];
