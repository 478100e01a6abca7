/** Types of ziti-bin.mjs (the interop runner imports the JavaScript; the TypeScript suites import these types). */
export declare const zitiToolsDir: string;
export declare function zitiBinary(): string;
