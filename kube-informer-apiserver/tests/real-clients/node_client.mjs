// Scenarios of the official Kubernetes JavaScript client (npm `@kubernetes/client-node`, 1.x) against
// kube-informer-apiserver.
//
// Run by kube-informer-apiserver/tests/real-clients/run with the client installed into its cache:
//
//     node node_client.mjs SCENARIO NAMESPACE
//
// with NODE_PATH naming the folder that holds node_modules, KUBECONFIG (the admin's kubeconfig), ADMIN_URL
// (…/kube-informer/admin/), ADMIN_TOKEN and CA_FILE in the environment. Exits 0 when the scenario holds; otherwise
// prints what did not and exits 1.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import https from 'node:https';

// ES modules ignore NODE_PATH: resolve the client from the folder the suite installed it into.
const require = createRequire(join(process.env.NODE_PATH, 'node_modules', 'x.js'));
const k8s = await import(require.resolve('@kubernetes/client-node'));

const WAIT_MS = 60_000; // any single wait may take this long

class Failed extends Error {}

function check(cond, what) {
    if (!cond) throw new Failed(what);
}

// A call to the server's admin API; the decoded JSON answer.
function admin(method, path, body) {
    const url = new URL(process.env.ADMIN_URL + path);
    const data = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
        const req = https.request(
            url,
            {
                method,
                ca: readFileSync(process.env.CA_FILE),
                headers: { Authorization: `Bearer ${process.env.ADMIN_TOKEN}` },
                timeout: WAIT_MS,
            },
            (res) => {
                let text = '';
                res.on('data', (c) => (text += c));
                res.on('end', () =>
                    res.statusCode < 300 ? resolve(JSON.parse(text)) : reject(new Error(`admin ${path}: ${text}`)),
                );
            },
        );
        req.on('error', reject);
        req.end(data);
    });
}

const logMark = async () => (await admin('GET', 'status')).requestLogMark;

// Resolves once the request log shows a `verb` request on `resource` in `namespace` after `mark`.
async function waitForRequest(mark, verb, resource, namespace) {
    const deadline = Date.now() + WAIT_MS;
    while (Date.now() < deadline) {
        const log = await admin('GET', `requests?since=${mark}&verb=${verb}&resource=${resource}`);
        if (log.items.some((r) => r.namespace === namespace)) return;
        await pause(50); // polling the server's log for a condition, bounded by the deadline
    }
    throw new Failed(`no ${verb} of ${resource} in ${namespace} reached the server`);
}

const pause = (ms) => new Promise((r) => setTimeout(r, ms));

// A queue of what callbacks saw, read in order with a deadline.
class Seen {
    constructor() {
        this.items = [];
        this.waiters = [];
    }
    push(item) {
        this.items.push(item);
        this.waiters.splice(0).forEach((w) => w());
    }
    async next(what) {
        const deadline = Date.now() + WAIT_MS;
        while (this.items.length === 0) {
            const left = deadline - Date.now();
            if (left <= 0) throw new Failed(`timed out waiting for ${what}`);
            await new Promise((r) => {
                const t = setTimeout(r, left);
                this.waiters.push(() => {
                    clearTimeout(t);
                    r();
                });
            });
        }
        return this.items.shift();
    }
}

function errorOf(e) {
    const body = typeof e.body === 'string' ? JSON.parse(e.body) : e.body;
    return { code: e.code, reason: body && body.reason };
}

async function refused(what, call, code, reason) {
    try {
        await call();
    } catch (e) {
        const got = errorOf(e);
        check(got.code === code && got.reason === reason, `${what}: ${code} ${reason} expected, got ${JSON.stringify(got)}`);
        return;
    }
    throw new Failed(`${what} succeeded`);
}

const kc = new k8s.KubeConfig();
kc.loadFromDefault();
const core = kc.makeApiClient(k8s.CoreV1Api);
const cm = (name, data = { v: '0' }, labels) => ({ metadata: { name, labels }, data });
const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
const jsonPatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch);

// ----- scenarios -----

async function version() {
    const info = await kc.makeApiClient(k8s.VersionApi).getCode();
    check(info.gitVersion.startsWith('v1.'), `gitVersion ${info.gitVersion}`);
    check(info.major === '1', `major ${info.major}`);
}

async function crud(namespace) {
    const created = await core.createNamespacedConfigMap({ namespace, body: cm('c', { color: 'blue' }) });
    check(created.metadata.uid && created.metadata.resourceVersion, 'uid and resourceVersion set');
    await refused('a second create of the same name', () => core.createNamespacedConfigMap({ namespace, body: cm('c') }), 409, 'AlreadyExists');
    const got = await core.readNamespacedConfigMap({ name: 'c', namespace });
    got.data.color = 'green';
    const replaced = await core.replaceNamespacedConfigMap({ name: 'c', namespace, body: got });
    check(JSON.stringify(replaced.data) === '{"color":"green"}', `replace: ${JSON.stringify(replaced.data)}`);
    await refused('a replace with a stale resourceVersion', () => core.replaceNamespacedConfigMap({ name: 'c', namespace, body: got }), 409, 'Conflict');
    const merged = await core.patchNamespacedConfigMap({ name: 'c', namespace, body: { data: { size: 'L' } } }, mergePatch);
    check(JSON.stringify(merged.data) === '{"color":"green","size":"L"}', `merge patch: ${JSON.stringify(merged.data)}`);
    const patched = await core.patchNamespacedConfigMap(
        { name: 'c', namespace, body: [{ op: 'remove', path: '/data/color' }] },
        jsonPatch,
    );
    check(JSON.stringify(patched.data) === '{"size":"L"}', `json patch: ${JSON.stringify(patched.data)}`);
    await core.deleteNamespacedConfigMap({ name: 'c', namespace });
    await refused('a read after delete', () => core.readNamespacedConfigMap({ name: 'c', namespace }), 404, 'NotFound');
}

async function listPaging(namespace) {
    for (let i = 0; i < 7; i++) {
        await core.createNamespacedConfigMap({ namespace, body: cm(`p${i}`, undefined, { half: i < 3 ? 'low' : 'high' }) });
    }
    const names = [];
    const remaining = [];
    let token;
    let pages = 0;
    do {
        const page = await core.listNamespacedConfigMap({ namespace, limit: 3, _continue: token });
        pages += 1;
        names.push(...page.items.map((o) => o.metadata.name));
        remaining.push(page.metadata.remainingItemCount);
        token = page.metadata._continue;
    } while (token);
    check(JSON.stringify(names.sort()) === JSON.stringify([0, 1, 2, 3, 4, 5, 6].map((i) => `p${i}`)), `paged names ${names}`);
    check(pages === 3, `${pages} pages of 3 for 7 objects`);
    check(remaining[0] === 4, `remainingItemCount of the first page: ${remaining}`);
    const low = await core.listNamespacedConfigMap({ namespace, labelSelector: 'half=low' });
    check(JSON.stringify(low.items.map((o) => o.metadata.name).sort()) === '["p0","p1","p2"]', 'label selector half=low');
    const one = await core.listNamespacedConfigMap({ namespace, fieldSelector: 'metadata.name=p4' });
    check(JSON.stringify(one.items.map((o) => o.metadata.name)) === '["p4"]', 'field selector metadata.name=p4');
}

async function watchEvents(namespace) {
    const rv = (await core.listNamespacedConfigMap({ namespace })).metadata.resourceVersion;
    const seen = new Seen();
    const mark = await logMark();
    const w = await new k8s.Watch(kc).watch(
        `/api/v1/namespaces/${namespace}/configmaps`,
        { resourceVersion: rv, allowWatchBookmarks: true },
        (type, obj) => seen.push({ type, obj }),
        (err) => seen.push({ type: 'DONE', err }),
    );
    await waitForRequest(mark, 'watch', 'configmaps', namespace);
    await core.createNamespacedConfigMap({ namespace, body: cm('w') });
    await core.patchNamespacedConfigMap({ name: 'w', namespace, body: { data: { v: '1' } } }, mergePatch);
    await core.deleteNamespacedConfigMap({ name: 'w', namespace });
    const events = [];
    while (events.length < 3) {
        const ev = await seen.next('three watch events');
        check(ev.type !== 'DONE', `the watch ended: ${ev.err}`);
        if (ev.type !== 'BOOKMARK') events.push(ev);
    }
    w.abort();
    const kinds = events.map((e) => `${e.type} ${e.obj.metadata.name}`).join(', ');
    check(kinds === 'ADDED w, MODIFIED w, DELETED w', `events ${kinds}`);
    check(events[1].obj.data.v === '1', 'the MODIFIED event carries the new data');
}

// client-node's informer (list, then watch from the list's version; relist after a 410) against this server.
async function informer(namespace) {
    await core.createNamespacedConfigMap({ namespace, body: cm('a') });
    await core.createNamespacedConfigMap({ namespace, body: cm('b') });
    const inf = k8s.makeInformer(kc, `/api/v1/namespaces/${namespace}/configmaps`, () =>
        core.listNamespacedConfigMap({ namespace }),
    );
    const seen = new Seen();
    for (const verb of ['add', 'update', 'delete']) inf.on(verb, (obj) => seen.push(`${verb} ${obj.metadata.name}`));
    // As client-node's docs ask: an informer stopped by an error is started again by its user.
    inf.on('error', (err) => {
        seen.push(`error ${err && (err.code || err.statusCode || err.message)}`);
        setTimeout(() => inf.start(), 100);
    });
    let mark = await logMark();
    await inf.start();
    const initial = [await seen.next('the first add'), await seen.next('the second add')].sort();
    check(JSON.stringify(initial) === '["add a","add b"]', `initial list ${initial}`);
    await waitForRequest(mark, 'watch', 'configmaps', namespace);
    await core.patchNamespacedConfigMap({ name: 'a', namespace, body: { data: { v: '1' } } }, mergePatch);
    await core.deleteNamespacedConfigMap({ name: 'b', namespace });
    await core.createNamespacedConfigMap({ namespace, body: cm('c') });
    const changes = [];
    for (let i = 0; i < 3; i++) changes.push(await seen.next('three changes'));
    check(changes.join(', ') === 'update a, delete b, add c', `changes ${changes.join(', ')}`);

    // The server answers the next watch with 410 and drops every connection: the informer must relist.
    await admin('POST', 'faults', { verb: 'watch', resource: 'configmaps', error: 410, times: 1 });
    mark = await logMark();
    await admin('POST', 'restart', {});
    await waitForRequest(mark, 'list', 'configmaps', namespace);
    await waitForRequest(mark, 'watch', 'configmaps', namespace);
    await core.createNamespacedConfigMap({ namespace, body: cm('d') });
    let next;
    do {
        next = await seen.next('the add after the relist');
    } while (next.startsWith('error') || next === 'update a' || next === 'add c');
    check(next === 'add d', `after the relist: ${next}`);
    const cached = inf.list(namespace).map((o) => o.metadata.name).sort();
    check(JSON.stringify(cached) === '["a","c","d"]', `the informer's cache ${cached}`);
    check(inf.get('a', namespace).data.v === '1', "the cache holds a's latest version");
    await inf.stop();
}

// CustomObjectsApi on a custom resource (the Frontend CRD of kube-informer/tests/fixtures/crds/, loaded at the server's start).
async function customObjects(namespace) {
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    const at = { group: 'web.example.com', version: 'v1', namespace, plural: 'frontends' };
    const frontend = (name, labels, spec = {}) => ({
        apiVersion: 'web.example.com/v1',
        kind: 'Frontend',
        metadata: { name, labels },
        spec: { image: 'nginx:1', ...spec },
    });
    const created = await custom.createNamespacedCustomObject({ ...at, body: frontend('a', { tier: 'front' }) });
    check(created.metadata.uid && created.metadata.generation === 1, 'uid and generation set');
    check(
        created.spec.replicas === 1 && created.spec.tier === 'web' && created.spec.port === 8080,
        `the schema's defaults: ${JSON.stringify(created.spec)}`,
    );
    await custom.createNamespacedCustomObject({ ...at, body: frontend('b', { tier: 'back' }, { replicas: 2 }) });
    await refused(
        'a second create of the same name',
        () => custom.createNamespacedCustomObject({ ...at, body: frontend('a') }),
        409,
        'AlreadyExists',
    );

    const all = await custom.listNamespacedCustomObject(at);
    check(all.kind === 'FrontendList', `list kind ${all.kind}`);
    check(JSON.stringify(all.items.map((o) => o.metadata.name).sort()) === '["a","b"]', 'list of every Frontend');
    const front = await custom.listNamespacedCustomObject({ ...at, labelSelector: 'tier=front' });
    check(JSON.stringify(front.items.map((o) => o.metadata.name)) === '["a"]', 'list with a label selector');
    const got = await custom.getNamespacedCustomObject({ ...at, name: 'a' });
    check(got.metadata.uid === created.metadata.uid, 'get by name');

    // The status subresource changes .status only, and makes no new generation.
    const patched = await custom.patchNamespacedCustomObjectStatus(
        { ...at, name: 'a', body: { status: { replicas: 1, selector: 'app=a' }, spec: { replicas: 7 } } },
        mergePatch,
    );
    check(patched.status.replicas === 1 && patched.status.selector === 'app=a', `status: ${JSON.stringify(patched.status)}`);
    check(patched.spec.replicas === 1 && patched.metadata.generation === 1, `spec: ${JSON.stringify(patched.spec)}`);
    const status = await custom.getNamespacedCustomObjectStatus({ ...at, name: 'a' });
    check(status.status.selector === 'app=a', 'status read through the subresource');
    const scale = await custom.getNamespacedCustomObjectScale({ ...at, name: 'a' });
    check(scale.spec.replicas === 1 && scale.status.selector === 'app=a', `scale: ${JSON.stringify(scale)}`);

    // An invalid object: 422 with kube-apiserver's causes.
    try {
        await custom.createNamespacedCustomObject({ ...at, body: frontend('bad', undefined, { tier: 'db' }) });
        throw new Failed('an invalid Frontend was created');
    } catch (e) {
        if (e instanceof Failed) throw e;
        const body = typeof e.body === 'string' ? JSON.parse(e.body) : e.body;
        check(e.code === 422 && body.reason === 'Invalid', `422 Invalid expected, got ${e.code} ${body && body.reason}`);
        const causes = body.details.causes.map((c) => `${c.field}: ${c.message}`);
        check(
            JSON.stringify(causes) === JSON.stringify(['spec.tier: Unsupported value: "db": supported values: "web", "api", "worker"']),
            `causes ${JSON.stringify(causes)}`,
        );
    }

    await custom.deleteNamespacedCustomObject({ ...at, name: 'a' });
    await refused('a read after delete', () => custom.getNamespacedCustomObject({ ...at, name: 'a' }), 404, 'NotFound');
    const left = await custom.listNamespacedCustomObject(at);
    check(JSON.stringify(left.items.map((o) => o.metadata.name)) === '["b"]', 'what is left after the delete');
}

async function serverSideApply(namespace) {
    const apply = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.ServerSideApply);
    const body = (data) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ssa', namespace }, data });
    const created = await core.patchNamespacedConfigMap(
        { name: 'ssa', namespace, body: body({ color: 'blue', size: 'large' }), fieldManager: 'node' },
        apply,
    );
    check(created.metadata.managedFields[0].manager === 'node', `managers ${JSON.stringify(created.metadata.managedFields)}`);
    check(created.metadata.managedFields[0].operation === 'Apply', 'an Apply entry');
    const reapplied = await core.patchNamespacedConfigMap(
        { name: 'ssa', namespace, body: body({ color: 'blue' }), fieldManager: 'node' },
        apply,
    );
    check(JSON.stringify(reapplied.data) === '{"color":"blue"}', `a re-apply without size: ${JSON.stringify(reapplied.data)}`);
    await refused(
        'a conflicting apply',
        () => core.patchNamespacedConfigMap({ name: 'ssa', namespace, body: body({ color: 'red' }), fieldManager: 'other' }, apply),
        409,
        'Conflict',
    );
    const forced = await core.patchNamespacedConfigMap(
        { name: 'ssa', namespace, body: body({ color: 'red' }), fieldManager: 'other', force: true },
        apply,
    );
    check(forced.data.color === 'red', `color after the forced apply: ${forced.data.color}`);
    const managers = forced.metadata.managedFields.map((e) => e.manager);
    check(JSON.stringify(managers) === '["other"]', `managers after the forced apply: ${managers}`);
}

const SCENARIOS = {
    version,
    crud,
    'list-paging': listPaging,
    watch: watchEvents,
    informer,
    'custom-objects': customObjects,
    'server-side-apply': serverSideApply,
};

const [scenario, namespace] = process.argv.slice(2);
if (!SCENARIOS[scenario] || !namespace) {
    console.error(`usage: node_client.mjs {${Object.keys(SCENARIOS).join('|')}} NAMESPACE`);
    process.exit(2);
}
try {
    await SCENARIOS[scenario](namespace);
    process.exit(0);
} catch (e) {
    console.error(e instanceof Failed ? `FAILED: ${e.message}` : e);
    process.exit(1);
}
