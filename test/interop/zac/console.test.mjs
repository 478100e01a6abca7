/**
 * The OpenZiti admin console (ZAC 4.5.1) as a real client: a headless Chromium drives its login, list, create,
 * edit and delete flows against the controller named by the interop environment (PORTCULLIS_URL and friends,
 * see ../run.mjs). Seed records are made through the management API first; what the console changes is checked
 * through the same API.
 *
 * Known Portcullis gaps (GAPS) are probed through the API before the flows run. A flow that fails because of a
 * gap that is still open (its error names a request the gap explains, or the flow declares it depends on the
 * gap) is reported as a node:test TODO naming the gap; any other failure fails the suite. Once a gap's probe
 * passes, flows that touch it are ordinary tests again.
 *
 * Needs the console bundle (../shared/tools/zac/ziti-console-4.5.1.tar.xz beside the repo, or ZAC_TARBALL) and
 * Chromium (/usr/bin/chromium, or CHROMIUM_PATH). Nothing leaves loopback: the browser aborts other hosts.
 * Debugging: ZAC_TRACE=1 prints the console's requests to the controller; ZAC_SCREENSHOT_DIR=<dir> keeps a
 * screenshot of every failed flow.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { Management } from './rest.mjs';
import { serveSpa } from './serve.mjs';
import { authPolicyBody, seed } from './seed.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..', '..');
const tarball = process.env.ZAC_TARBALL ?? resolve(repo, '..', 'shared', 'tools', 'zac', 'ziti-console-4.5.1.tar.xz');
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const controllerUrl = process.env.PORTCULLIS_URL;
const adminUser = process.env.PORTCULLIS_ADMIN_USER;
const adminPassword = process.env.PORTCULLIS_ADMIN_PASSWORD;
const caFile = process.env.PORTCULLIS_CA_FILE;
// The whole suite's time budget: once spent, the remaining flows fail at once instead of each timing out.
const budgetMs = Number(process.env.ZAC_BUDGET_SECONDS ?? 480) * 1000;

/**
 * Known Portcullis gaps (none today): name -> { probe, explains }. `probe` answers undefined when the controller
 * behaves like upstream, else a sentence naming the request and the answer; `explains` recognises a failure the
 * gap causes by the request its error message names.
 */
const GAPS = {};
const openGaps = {}; // gap name -> sentence, for the gaps whose probe failed

let api;
let deadline;
let prefix;
let workDir;
let app;
let browser;
let page;
let seeded;

before(async () => {
  assert.ok(controllerUrl && adminUser && adminPassword && caFile,
    'PORTCULLIS_URL, PORTCULLIS_ADMIN_USER, PORTCULLIS_ADMIN_PASSWORD and PORTCULLIS_CA_FILE must be set (test/interop/run.mjs sets them)');
  assert.ok(existsSync(tarball), `console bundle not found at ${tarball}`);
  assert.ok(existsSync(chromiumPath), `Chromium not found at ${chromiumPath}`);
  deadline = Date.now() + budgetMs;
  api = new Management(controllerUrl, readFileSync(caFile));
  await api.login(adminUser, adminPassword);
  for (const [name, g] of Object.entries(GAPS)) {
    const open = await g.probe();
    if (open) openGaps[name] = open;
  }
  prefix = `zac${Date.now().toString(36)}`;
  seeded = await seed(api, prefix);

  workDir = mkdtempSync(join(tmpdir(), 'zac-'));
  execFileSync('tar', ['-xJf', tarball, '-C', workDir]);
  app = await serveSpa(join(workDir, 'app-ziti-console'));
  browser = await chromium.launch({ executablePath: chromiumPath, args: ['--ignore-certificate-errors', '--no-sandbox'] });
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1600, height: 1000 } });
  // Loopback only: the bundle links web fonts and map tiles on the internet; those requests are aborted.
  await context.route('**/*', (route) => {
    const host = new URL(route.request().url()).hostname;
    return host === '127.0.0.1' || host === 'localhost' || host === '[::1]' ? route.continue() : route.abort();
  });
  page = await context.newPage();
  page.setDefaultTimeout(15_000);
  if (process.env.ZAC_TRACE) {
    page.on('response', (res) => {
      if (!res.url().startsWith(app.url)) console.log(`# ${res.status()} ${res.request().method()} ${res.url()}`);
    });
  }
});

after(async () => {
  await browser?.close();
  await app?.close();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
  if (prefix && api?.session) await cleanUp().catch((err) => console.log(`# clean-up failed: ${err.message}`));
});

/** Deletes every record of this run (seeds, and records a failed flow left), dependants first. */
async function cleanUp() {
  const order = ['terminators', 'service-policies', 'edge-router-policies', 'service-edge-router-policies', 'configs', 'config-types',
    'services', 'identities', 'edge-routers', 'transit-routers', 'posture-checks', 'auth-policies', 'external-jwt-signers', 'cas'];
  for (const type of order) {
    // Terminators have no name: they go with the run's service.
    const filter = type === 'terminators' ? `service="${seeded?.ids.service}"` : `name contains "${prefix}"`;
    const list = await api.call('GET', `${type}?limit=500&filter=${encodeURIComponent(filter)}`);
    for (const item of list) await api.raw('DELETE', `${type}/${item.id}`);
  }
}

// ---- helpers --------------------------------------------------------------------------------------------

/**
 * One console flow as a test. A failure is reported as TODO when an open gap explains it (see GAPS), or when the
 * flow declares in `gaps` that it depends on a gap that is open. With ZAC_SCREENSHOT_DIR set, a failed flow
 * leaves `<test name>.png` there.
 */
function flow(name, { gaps = [] } = {}, fn) {
  test(name, { timeout: 90_000 }, async (t) => {
    assert.ok(Date.now() < deadline, `the suite's time budget (${budgetMs / 1000} s, ZAC_BUDGET_SECONDS) is spent`);
    try {
      await fn();
    } catch (err) {
      const message = String(err?.message ?? err);
      const explained = Object.keys(openGaps).filter((g) => gaps.includes(g) || GAPS[g].explains?.test(message));
      if (explained.length) t.todo(`known Portcullis gap: ${explained.map((g) => openGaps[g]).join('; ')}`);
      const dir = process.env.ZAC_SCREENSHOT_DIR;
      if (dir) await page?.screenshot({ path: join(dir, `${name.replace(/[^\w.-]+/g, '_')}.png`) }).catch(() => {});
      throw err;
    }
  });
}

/**
 * Waits for the console's request to the controller with a method in `methods` ('GET', or 'PATCH|PUT') whose
 * path and query match `pattern`; answers the response.
 */
function controllerResponse(methods, pattern) {
  const origin = new URL(controllerUrl).origin;
  return page.waitForResponse((res) => {
    const url = new URL(res.url());
    return url.origin === origin && methods.split('|').includes(res.request().method()) && pattern.test(url.pathname + url.search);
  });
}

/** `<method> <url> [sent <body>] answered <status>: <body>`, for assertion messages. */
async function describe(res) {
  const sent = res.request().postData();
  const body = await res.text().catch(() => '(body not available)');
  return `${res.request().method()} ${res.url()}${sent ? ` sent ${sent.slice(0, 400)}` : ''} answered ${res.status()}: ${body.slice(0, 300)}`;
}

/** Asserts that the console's request answered 200. */
async function assertOk(res) {
  assert.equal(res.status(), 200, await describe(res));
}

/** Opens a console route by URL, as a bookmark or a reload would. */
async function open(route) {
  await page.goto(`${app.url}/${route}`);
}

/** Types into an input the way a user does: the console reads many fields on keyup or change, not on input. */
async function typeInto(locator, text) {
  await locator.fill(text);
  await locator.press('End');
  await locator.dispatchEvent('change');
}

/**
 * Clicks the form's save button and checks the controller's answer to the save (method in `methods`, path
 * matching `pattern`). Answers the answer's `data` and `returned()`, which waits for the console to leave the
 * form as it does after a successful save (most forms first read the saved record back); when it stays, the
 * error names the console's failed requests.
 */
async function save(methods, pattern) {
  const failed = [];
  const onResponse = (res) => {
    if (res.status() >= 400 && !res.url().startsWith(app.url)) failed.push(`${res.request().method()} ${res.url()} answered ${res.status()}`);
  };
  const formUrl = page.url();
  const saved = controllerResponse(methods, pattern);
  page.on('response', onResponse);
  let data;
  try {
    await page.locator('.save-button').click();
    const res = await saved;
    assert.ok(res.ok(), await describe(res));
    data = (await res.json().catch(() => undefined))?.data;
  } catch (err) {
    page.off('response', onResponse);
    throw err;
  }
  const returned = async () => {
    try {
      await page.waitForURL((url) => url.href !== formUrl, { timeout: 10_000 });
    } catch {
      throw new Error(`the console stayed on the form after the save; its failed requests: ${failed.join('; ') || 'none'}`);
    } finally {
      page.off('response', onResponse);
    }
  };
  return { data, returned };
}

// ---- 1. login and dashboard -----------------------------------------------------------------------------

flow('login: controller URL, user name and password land on the dashboard', {}, async () => {
  await open('login');
  await typeInto(page.getByPlaceholder('enter a name for your controller'), 'interop');
  await typeInto(page.getByPlaceholder('e.g. https://example.domain.io:1280'), controllerUrl);
  await page.getByRole('button', { name: /set controller/i }).click();
  await typeInto(page.locator('#Username'), adminUser);
  await typeInto(page.locator('#Password'), adminPassword);
  await page.getByRole('button', { name: /log in/i }).click();
  await page.waitForURL(/\/dashboard$/);
  await page.locator('.side-navigator-menu-item').first().waitFor(); // the signed-in navigation
});

flow('dashboard: reads routers, links and circuits', {}, async () => {
  const answers = ['routers', 'links', 'circuits'].map((p) => controllerResponse('GET', new RegExp(`^/fabric/v1/+${p}\\b`)));
  await open('dashboard');
  for (const res of await Promise.all(answers)) await assertOk(res);
});

// ---- 2. list pages show the records made through the API ----------------------------------------------

/** Each list page: its route, the management list it loads and the text of the seeded record it must show. */
const LIST_PAGES = [
  { route: 'identities', list: 'identities', text: () => seeded.name('identity') },
  { route: 'services', list: 'services', text: () => seeded.name('service') },
  { route: 'configs', list: 'configs', text: () => seeded.name('config') },
  { route: 'config-types', list: 'config-types', text: () => seeded.name('config-type') },
  { route: 'routers', list: 'edge-routers', text: () => seeded.name('edge-router') },
  { route: 'transit-routers', list: 'transit-routers', text: () => seeded.name('transit-router') },
  { route: 'service-policies', list: 'service-policies', text: () => seeded.name('service-policy') },
  { route: 'router-policies', list: 'edge-router-policies', text: () => seeded.name('edge-router-policy') },
  { route: 'service-router-policies', list: 'service-edge-router-policies', text: () => seeded.name('service-edge-router-policy') },
  { route: 'posture-checks', list: 'posture-checks', text: () => seeded.name('posture-check') },
  { route: 'auth-policies', list: 'auth-policies', text: () => seeded.name('auth-policy') },
  { route: 'jwt-signers', list: 'external-jwt-signers', text: () => seeded.name('jwt-signer') },
  { route: 'certificate-authorities', list: 'cas', text: () => seeded.name('ca') },
  { route: 'terminators', list: 'terminators', text: () => seeded.terminatorAddress },
  // The API session this test logged in with through the API.
  { route: 'api-sessions', list: 'api-sessions', text: () => api.sessionId },
  // A service session needs an SDK client: the page must load its (empty) list.
  { route: 'sessions', list: 'sessions', text: () => undefined },
  { route: 'attributes', list: 'identity-role-attributes', text: () => seeded.attributes.identity },
];

for (const p of LIST_PAGES) {
  flow(`list page /${p.route} shows the record made through the API`, {}, async () => {
    const loaded = controllerResponse('GET', new RegExp(`^/edge/management/v1/${p.list}\\?`));
    await open(p.route);
    await assertOk(await loaded);
    const text = p.text();
    if (text) await page.getByText(text, { exact: true }).first().waitFor();
  });
}

// ---- 3. create, edit and delete through the forms ------------------------------------------------------

/**
 * The editable types: list route (and the form's route when it differs), management type, the placeholder of
 * the form's name field, `fill` for the other fields a create needs, `check` of the record made, and `rest`, a
 * body to make a record through the API when the edit or delete flow has none from the create flow.
 */
const FORMS = [
  {
    what: 'identity', route: 'identities', type: 'identities', name: 'Name this identity',
    rest: (name) => ({ name, type: 'User', isAdmin: false }),
  },
  {
    what: 'service', route: 'services', formRoute: 'services/advanced', type: 'services', name: 'Name this Service',
    // "+" on the services page first asks for a simple or an advanced service.
    afterAdd: () => page.locator('#AdvancedServiceCard').click(),
    rest: (name) => ({ name, encryptionRequired: true }),
  },
  {
    what: 'config', route: 'configs', type: 'configs', name: 'Name this config',
    // The seeded config type's schema has one string property, `note`, which the form renders as a text input.
    fill: async () => {
      await page.locator('#ConfigTypes').selectOption(seeded.ids.configType);
      await typeInto(page.getByPlaceholder('enter a value for note'), 'made in the console');
    },
    check: (record) => assert.deepEqual(record.data, { note: 'made in the console' }),
    rest: (name) => ({ name, configTypeId: seeded.ids.configType, data: { note: 'made through the API' } }),
  },
  {
    what: 'service policy', route: 'service-policies', type: 'service-policies', name: 'Name this service policy',
    rest: (name) => ({ name, type: 'Dial', semantic: 'AnyOf' }),
  },
  {
    what: 'edge router policy', route: 'router-policies', type: 'edge-router-policies', name: 'Name this edge router policy',
    rest: (name) => ({ name, semantic: 'AnyOf' }),
  },
  {
    what: 'service edge router policy', route: 'service-router-policies', type: 'service-edge-router-policies',
    name: 'Name this service edge router policy', rest: (name) => ({ name, semantic: 'AnyOf' }),
  },
  { what: 'edge router', route: 'routers', type: 'edge-routers', name: 'Name this edge router', rest: (name) => ({ name }) },
  {
    what: 'posture check', route: 'posture-checks', type: 'posture-checks', name: 'Name this posture check',
    fill: async () => {
      await page.locator('#SelectedConfigType').selectOption('MFA');
      await typeInto(page.getByPlaceholder('# in seconds'), '600');
    },
    check: (record) => assert.equal(record.typeId, 'MFA'),
    rest: (name) => ({ name, typeId: 'DOMAIN', domains: ['zac.example'] }),
  },
  { what: 'auth policy', route: 'auth-policies', type: 'auth-policies', name: 'Name this Auth Policy', rest: authPolicyBody },
];

for (const f of FORMS) {
  const formRoute = f.formRoute ?? f.route;
  const nameInput = () => page.getByPlaceholder(f.name, { exact: true });
  // The record the create flow made; the edit and delete flows make their own through the API without one.
  const made = { id: undefined, name: undefined };
  const target = async () => {
    if (!made.id) {
      made.name = `${prefix}-api-${f.type}`;
      made.id = await api.create(f.type, f.rest(made.name));
    }
    return made;
  };

  flow(`${f.what}: create through the form`, {}, async () => {
    await open(f.route);
    await page.locator('[data-action="add"]').click();
    await f.afterAdd?.();
    await page.waitForURL(new RegExp(`/${formRoute}/create$`));
    const name = `${prefix}-ui-${f.type}`;
    await typeInto(nameInput(), name);
    await f.fill?.();
    const { data, returned } = await save('POST', new RegExp(`^/edge/management/v1/${f.type}$`));
    Object.assign(made, { id: data.id, name });
    const record = await api.find(f.type, data.id);
    assert.equal(record?.name, name);
    f.check?.(record);
    await returned();
  });

  flow(`${f.what}: edit page loads the record, a rename is saved`, {}, async () => {
    const { id, name } = await target();
    // The form loads its record as GET .../<type>/<id>// (two trailing slashes).
    const loaded = controllerResponse('GET', new RegExp(`^/edge/management/v1/${f.type}/${id}/+$`));
    await open(`${formRoute}/${id}`);
    await assertOk(await loaded);
    await page.waitForFunction(
      ([placeholder, value]) => [...document.querySelectorAll('input')].some((i) => i.placeholder === placeholder && i.value === value),
      [f.name, name],
    );
    made.name = `${name}-edited`;
    await typeInto(nameInput(), made.name);
    const { returned } = await save('PATCH|PUT', new RegExp(`^/edge/management/v1/${f.type}/${id}/*$`));
    assert.equal((await api.find(f.type, id))?.name, made.name);
    await returned();
  });

  flow(`${f.what}: delete from the list page`, {}, async () => {
    const { id } = await target();
    const listed = controllerResponse('GET', new RegExp(`^/edge/management/v1/${f.type}\\?`));
    await open(f.route);
    await assertOk(await listed);
    await page.locator(`[id="RowDots_${id}"]`).click();
    await page.locator('#TableActionButton_delete').click();
    const deleted = controllerResponse('DELETE', new RegExp(`^/edge/management/v1/${f.type}/${id}/*$`));
    await page.locator('.confirm-buttons-container .button.confirm').click();
    const res = await deleted;
    assert.ok(res.ok(), await describe(res));
    assert.equal(await api.find(f.type, id), undefined, 'the record is still there after the delete');
    made.id = undefined;
  });
}

// ---- 4. attribute pickers ------------------------------------------------------------------------------

/**
 * Opens the picker with `placeholder`, narrows it to `attribute` and picks the listed `#attribute` (not the
 * "(New Attribute)" entry the picker offers for any typed text).
 */
async function pickAttribute(placeholder, attribute) {
  const search = page.getByPlaceholder(placeholder, { exact: true });
  await search.click();
  await search.pressSequentially(attribute);
  await page.locator('li.hashtag.select2-results__option', { hasText: new RegExp(`^\\s*#${attribute}\\s*$`) }).click();
}

/** Waits for the console's `<kind>-role-attributes` list, sorted by name as the pickers ask for it. */
function roleAttributes(kind) {
  return controllerResponse('GET', new RegExp(`^/edge/management/v1/${kind}-role-attributes\\?\\S*sort=name(%20|\\+)asc`));
}

flow('attribute picker: the identity form lists identity attributes; the picked one is saved', {}, async () => {
  const listed = roleAttributes('identity');
  await open('identities/create');
  await assertOk(await listed);
  await typeInto(page.getByPlaceholder('Name this identity', { exact: true }), `${prefix}-ui-picked-identity`);
  await pickAttribute('Add attributes to group Identities', seeded.attributes.identity);
  const { data, returned } = await save('POST', /^\/edge\/management\/v1\/identities$/);
  assert.deepEqual((await api.find('identities', data.id))?.roleAttributes, [seeded.attributes.identity]);
  await returned();
});

flow('attribute picker: the service policy form lists identity and service attributes; the picked ones are saved', {}, async () => {
  const lists = [roleAttributes('identity'), roleAttributes('service')];
  await open('service-policies/create');
  for (const res of await Promise.all(lists)) await assertOk(res);
  await typeInto(page.getByPlaceholder('Name this service policy', { exact: true }), `${prefix}-ui-picked-policy`);
  await page.locator('#PolicyType').selectOption('Bind');
  await pickAttribute('Select identity attributes', seeded.attributes.identity);
  await pickAttribute('Select service attributes', seeded.attributes.service);
  const { data, returned } = await save('POST', /^\/edge\/management\/v1\/service-policies$/);
  const policy = await api.find('service-policies', data.id);
  assert.equal(policy?.type, 'Bind');
  assert.deepEqual(policy?.identityRoles, [`#${seeded.attributes.identity}`]);
  assert.deepEqual(policy?.serviceRoles, [`#${seeded.attributes.service}`]);
  await returned();
});

// ---- 5. features the console gates on the controller version -------------------------------------------

flow('controller version: the JWT signer form offers auto enrollment (shown for controllers >= 2.0)', {}, async () => {
  await open('jwt-signers/create');
  await page.getByPlaceholder('Name this JWT Signer', { exact: true }).waitFor();
  await page.locator('.form-field-title', { hasText: /^Auto Enrollment$/ }).waitFor();
});
