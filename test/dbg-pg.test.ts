import { it } from 'node:test';
import { startTestController } from './support/controller.ts';
const tc = await startTestController({ extraArgs: ['--log-level', 'error'] });
it('probes', async () => {
  for (const path of [
    '/edge-routers?filter=isOnline=true', '/edge-routers?filter=syncStatus="SYNC_UNKNOWN"', '/routers?filter=isOnline=true',
    '/edge-routers?filter=' + encodeURIComponent('hostname = "x"'), '/fabric/v1/routers',
  ]) {
    const res = path.startsWith('/fabric') ? await tc.http.get(path, { headers: { 'zt-session': tc.adminToken } }) : await tc.mgmt.get(path);
    console.log(path, res.status, res.status >= 400 ? res.text.slice(0, 200) : '');
  }
  const r = await tc.http.get('/fabric/v1/routers?filter=' + encodeURIComponent('connected = true'), { headers: { 'zt-session': tc.adminToken } });
  console.log('fabric filter', r.status);
});
