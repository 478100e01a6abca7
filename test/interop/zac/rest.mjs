/**
 * A minimal client of the controller's management API for the console tests: logs in with a password,
 * then sends JSON requests with the zt-session header. TLS is verified against the given CA bundle.
 */
import { request } from 'node:https';

export class Management {
  /** `url` is the controller's root (https://host:port); `ca` the PEM bundle to trust. */
  constructor(url, ca) {
    this.root = url.replace(/\/+$/, '');
    this.ca = ca;
    this.session = undefined; // zt-session token
    this.sessionId = undefined; // its API session's id
  }

  /** Sends one request; `path` is absolute (`/version`) or relative to /edge/management/v1 (`identities`). */
  raw(method, path, body) {
    const url = new URL(path.startsWith('/') ? this.root + path : `${this.root}/edge/management/v1/${path}`);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers = { accept: 'application/json' };
    if (payload !== undefined) headers['content-type'] = 'application/json';
    if (this.session) headers['zt-session'] = this.session;
    return new Promise((resolve, reject) => {
      const req = request(url, { method, headers, ca: this.ca }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => {
          let json;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode, json, text });
        });
      });
      req.on('error', reject);
      req.setTimeout(15_000, () => req.destroy(new Error(`${method} ${url} timed out`)));
      req.end(payload);
    });
  }

  /** Like `raw`, but answers the envelope's `data` and throws on a status other than `expect`. */
  async call(method, path, body, expect) {
    const res = await this.raw(method, path, body);
    const ok = expect === undefined ? res.status >= 200 && res.status < 300 : res.status === expect;
    if (!ok) throw new Error(`${method} ${path} answered ${res.status}: ${res.text.slice(0, 500)}`);
    return res.json?.data;
  }

  async login(username, password) {
    const data = await this.call('POST', 'authenticate?method=password', { username, password });
    this.session = data.token;
    this.sessionId = data.id;
    return data;
  }

  /** Creates a record and answers its id. */
  async create(type, body) {
    return (await this.call('POST', type, body, 201)).id;
  }

  /** The record, or undefined when the controller answers 404. */
  async find(type, id) {
    const res = await this.raw('GET', `${type}/${id}`);
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw new Error(`GET ${type}/${id} answered ${res.status}: ${res.text.slice(0, 500)}`);
    return res.json.data;
  }

  /** The first record whose name is `name`, or undefined. */
  async byName(type, name) {
    const filter = encodeURIComponent(`name="${name}"`);
    const list = await this.call('GET', `${type}?filter=${filter}`);
    return list[0];
  }
}
