"""Browser tests of a phone as its person's device (Docs/WEB.md, "A phone as a device"), run by browser-tests.py
after its own steps: Alice's node serves its page over --api-tls; her desktop window makes a link in Settings; a
second Chromium window at phone size (its own profile: its own IndexedDB and cookies) opens the address its QR code
holds (decoded with zbarimg), makes its key, posts, comments and reacts as Alice; Bob's node shows them as hers, and
a reader written here from PROTOCOL.md alone (not the node's code) checks that the post is signed by a log key that
the phone's device key declared, and that Alice's node added that device with the phone's consent."""

import base64
import json
import re
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


# ------------------------------------------------------------------------------------------------------------------
# An independent reader of records (PROTOCOL.md §2.1, §2.2, §2.8, §2.10): headers only, as the store keeps them.

def parse_header(header):
    """The fields of a record header (§2.1) that the checks below need; raises on a malformed one."""
    assert header[:4] == b'CNTM' and header[4] == 2, 'not a record of format version 2'
    kind = header[5]
    author = header[6:38]
    sequence = int.from_bytes(header[38:46], 'big')
    at = 46 + (32 if sequence > 1 else 0)
    created = int.from_bytes(header[at:at + 8], 'big', signed=True)
    references = header[at + 8:len(header) - 100]
    signed, signature = header[:-64], header[-64:]
    return {'kind': kind, 'author': author, 'sequence': sequence, 'createdAt': created,
            'references': references, 'signed': signed, 'signature': signature}


def verify(public, signature, message):
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
        return True
    except InvalidSignature:
        return False


def opaque_data(references):
    """`data` of a kind 8 … 255 record (§2.8): after the 32-byte context and its u16 length."""
    length = int.from_bytes(references[32:34], 'big')
    return references[34:34 + length]


def read_chain(database, post_id, phone_device, node_id):
    """Checks, in the store at `database` (read only), that the post `post_id` (hex) is signed by a log key declared
    by `phone_device` (hex) with the log key's own signature, and that `node_id` (hex) added that device to the
    account with the device's consent. Returns a sentence of what was checked."""
    db = sqlite3.connect(f'file:{database}?mode=ro', uri=True)
    try:
        row = db.execute('SELECT bytes FROM record WHERE id = ?', (bytes.fromhex(post_id),)).fetchone()
        assert row, f'no record {post_id[:12]} in {database}'
        post = parse_header(row[0])
        assert post['kind'] == 2, f"record {post_id[:12]} is of kind {post['kind']}, not a post"
        assert verify(post['author'], post['signature'], post['signed']), 'the post does not verify by its author'
        device = bytes.fromhex(phone_device)
        declarations = []
        # The kind is read from the header (byte 5): the store's own columns are not part of the protocol.
        for (header,) in db.execute('SELECT bytes FROM record WHERE author = ?', (device,)):
            record = parse_header(header)
            if record['kind'] != 11:
                continue
            assert verify(device, record['signature'], record['signed']), 'a declaration does not verify'
            data = opaque_data(record['references'])
            account, group, log, signature = data[:32], data[32:64], data[64:96], data[96:160]
            message = b'continuum-log-declaration-v3' + account + group + device
            if log == post['author'] and verify(log, signature, message):
                declarations.append(account)
        assert declarations, 'no declaration by the phone names the post\'s log key with its signature'
        account = declarations[0]
        node = bytes.fromhex(node_id)
        added = False
        for (header,) in db.execute('SELECT bytes FROM record WHERE author = ?', (node,)):
            record = parse_header(header)
            if record['kind'] != 9:
                continue
            data = opaque_data(record['references'])
            if data[:32] == account and data[32:64] == device and verify(node, record['signature'], record['signed']):
                added = verify(device, data[64:128], b'continuum-device-consent-v3' + account + device)
        assert added, 'Alice\'s node signed no device-add of the phone with its consent'
        assert post['author'] != device and post['author'] != node, 'the post is not signed by a log key of the phone'
        return (f"post signed by log {post['author'].hex()[:12]}, declared by the phone's device key "
                f'{phone_device[:12]}, which Alice\'s node {node_id[:12]} added with its consent')
    finally:
        db.close()


def exported_keys(root):
    """Files under `root` that hold an Ed25519 private key in a form a browser could export it in: PKCS #8 (its DER
    prefix) or a JWK with a private part. The keys are made not extractable, so a page cannot export them at all
    (the link step checks); this checks that none reached the node in another way either."""
    pkcs8 = bytes.fromhex('302e020100300506032b657004220420')
    found = []
    for path in Path(root).rglob('*'):
        if path.is_file():
            data = path.read_bytes()
            if pkcs8 in data or (b'"crv":"Ed25519"' in data and b'"d":' in data):
                found.append(str(path))
    return found


# ------------------------------------------------------------------------------------------------------------------

def tap(browser, t, css, timeout=10.0):
    """Clicks the element `css` names, scrolled to the middle first (a phone's bottom bar covers the page's end)."""
    element = browser.wait_css(css, timeout)
    browser.js("arguments[0].scrollIntoView({block: 'center'})", {t.ELEMENT: element})
    browser.click(element)


# The page's record encoder (Web/records.js) against the independent Python encoder's vectors (PROTOCOL.md §8), in
# the page itself, with the browser's WebCrypto: each vector's key imported from its seed, its salt given, and the
# whole record compared byte for byte (Ed25519 signatures are deterministic).
ENCODE_VECTORS = '''
const done = arguments[arguments.length - 1];
const vectors = arguments[0];
const codes = { 'image/jpeg': 1, 'image/png': 2, 'image/heic': 3, 'image/webp': 4, 'image/gif': 5 };
(async () => {
  const r = await import('/records.js');
  const build = (v) => {
    const b = v.body;
    switch (v.kind) {
      case 'profile': return r.profile(b.name);
      case 'post': return r.post(b.caption, { ...b.photo, mediaType: codes[b.photo.mediaType],
        latitudeE7: b.latitudeE7, longitudeE7: b.longitudeE7 });
      case 'comment': return r.comment(r.fromHex(b.post), b.text);
      case 'edit': return b.photo || b.location === 'set' ? null : r.edit(r.fromHex(b.post),
        { caption: b.caption ?? undefined, location: b.location === 'removed' ? null : undefined });
      case 'delete': return r.deletion(b.targets);
      case 'reaction': return r.reaction(r.fromHex(b.post), b.comment ? r.fromHex(b.comment) : null, b.emoji);
      case 'account': return b.account ? r.joining(r.fromHex(b.account)) : null;
      case 'log': return r.declaration(r.fromHex(b.account), r.fromHex(b.group), r.fromHex(b.log), r.fromHex(b.signature));
      default: return null;
    }
  };
  const results = [];
  for (const v of vectors) {
    r.random.salt = () => r.fromHex(v.salt ?? '');
    const body = build(v);
    if (!body) continue;
    const key = await crypto.subtle.importKey('jwk', { kty: 'OKP', crv: 'Ed25519', d: r.base64url(r.fromHex(v.seed)),
      x: r.base64url(r.fromHex(v.author)) }, { name: 'Ed25519' }, false, ['sign']);
    const bytes = await r.makeRecord(body, { author: r.fromHex(v.author), privateKey: key, sequence: v.sequence,
      previous: v.previous ? r.fromHex(v.previous) : null, createdAt: v.createdAt });
    results.push([v.name, r.hex(bytes) === v.record ? 'same' : r.hex(bytes)]);
  }
  done(results);
})().catch((error) => done(String(error)));
'''


def run(steps, args, work, t):
    """The phone steps, on nodes of their own; `t` is browser-tests.py (Node, Browser, wait_for, sizes)."""
    artifacts = Path(args.artifacts)
    fixtures = Path(args.fixtures)
    root = Path(work) / 'phone'
    root.mkdir()
    alice = t.Node(args.binary, 'Alice', root, network='browser-tests-phone')
    bob = t.Node(args.binary, 'Bob', root, network='browser-tests-phone')
    alice.start(token=f'phone-test-{time.time_ns()}', extra=['--api-tls'])
    bob.start(peers=[alice])
    driver = t.start_chromedriver(artifacts)
    owner = t.Browser.start(driver, *t.PHONE)
    phone = t.Browser.start(driver, *t.PHONE)
    state = {}
    try:
        def encoder_vectors():
            owner.get(alice.page_url.split('?')[0] + '?token=' + alice.token)
            owner.wait_css('#grid')
            vectors = json.loads((Path(t.__file__).resolve().parent.parent / 'Tests' / 'ContinuumCoreTests' / 'Resources'
                                  / 'vectors.json').read_text())['vectors']
            results = owner.js_async(ENCODE_VECTORS, vectors)
            assert isinstance(results, list), results
            wrong = [(name, got[:80]) for name, got in results if got != 'same']
            assert not wrong, f'records.js differs from the vectors: {wrong}'
            kinds = sorted({vector['kind'] for vector in vectors if vector['name'] in {name for name, _ in results}})
            assert len(results) == 13 and {'post', 'comment', 'reaction', 'log', 'account', 'delete'} <= set(kinds), (len(results), kinds)
            return f'{len(results)} vectors ({", ".join(kinds)}) encoded and signed in the page, byte for byte'
        steps.run('the page encodes and signs the protocol\'s test vectors byte for byte', encoder_vectors, owner)

        def link_phone():
            owner.get(alice.page_url.split('?')[0] + '?token=' + alice.token + '#/settings')
            tap(owner, t, '#link-phone')
            t.wait_for('the QR code drawn', lambda: owner.js(
                "const i = document.querySelector('#link-phone-qr'); return i && i.complete && i.naturalWidth > 0"))
            url = owner.text(owner.find('#link-phone-url'))
            qr = owner.find('#link-phone-qr')
            owner.js("arguments[0].scrollIntoView({block: 'center'})", {t.ELEMENT: qr})
            png = artifacts / 'link-phone-qr.png'
            png.write_bytes(base64.b64decode(owner.cmd('GET', f'/element/{qr}/screenshot')))
            if not shutil.which('zbarimg'):
                raise AssertionError('zbarimg not found: apt-get install -y --no-install-recommends zbar-tools')
            decoded = subprocess.run(['zbarimg', '--raw', '-q', str(png)], capture_output=True, text=True,
                                     timeout=30).stdout.strip()
            assert decoded == url and '#link=' in url and 'token' not in url, f'QR {decoded!r}, page {url!r}'
            phone.get(decoded)
            tap(phone, t, '#accept-link:not([hidden])', 15)
            t.wait_for('the timeline on the phone', lambda: phone.js("return document.querySelector('#grid') !== null"), 20)
            state['device'] = phone.js("return localStorage.getItem('continuum-browser-device')")
            devices = [device['id'] for device in alice.get('/api/devices')['devices']]
            assert state['device'] in devices and alice.id in devices, devices
            # The private key cannot leave the browser, not even through the page's own scripts.
            exported = phone.js_async(
                "const done = arguments[0]; const r = indexedDB.open('continuum-browser');"
                " r.onsuccess = () => { const q = r.result.transaction('keys').objectStore('keys').get('device');"
                " q.onsuccess = () => crypto.subtle.exportKey('pkcs8', q.result.privateKey)"
                ".then(() => done('exported'), (e) => done(e.name)); };")
            assert exported == 'InvalidAccessError', f'the device key could be exported: {exported}'
            cookies = [cookie['name'] for cookie in phone.cmd('GET', '/cookie')]
            assert not any(name.startswith('continuum-token') for name in cookies), f'the phone holds the token: {cookies}'
            return f'QR decodes to {url.split("#")[0]}#link=…; phone device {state["device"][:12]} added; key not exportable'
        if not steps.run('a phone links itself as Alice\'s device by scanning her QR code', link_phone, phone):
            return

        def phone_posts():
            phone.js("location.hash = '#/new'")
            phone.choose_files(phone.wait_css('#photo-input'), (fixtures / 'waterfall.jpg').resolve())
            t.wait_for('the preview', lambda: phone.js(
                "const p = document.querySelector('#preview'); return !p.hidden && p.complete && p.naturalWidth > 0"))
            phone.type(phone.find('#caption'), 'From my phone')
            tap(phone, t, '#upload')
            post = t.wait_for('the new post page', lambda: (m := re.match(r'#/post/([0-9a-f]{64})$',
                                                                          phone.js('return location.hash'))) and m.group(1), 30)
            state['post'] = post
            seen = t.wait_for('the post on Bob', lambda: bob.has_post(post) and bob.get(f'/api/posts/{post}'), 30)
            account = alice.get('/api/devices')['account']
            assert seen['authorName'] == 'Alice' and seen['account'] == account, seen
            read = read_chain(alice.data / 'continuum.sqlite', post, state['device'], alice.id)
            read_bob = read_chain(bob.data / 'continuum.sqlite', post, state['device'], alice.id)
            assert read == read_bob
            leaked = exported_keys(alice.data) + exported_keys(bob.data)
            assert not leaked, f'private keys in the nodes\' files: {leaked}'
            return f'Bob shows it by Alice; {read}; no private key in either node\'s files'
        steps.run('a post made on the phone is Alice\'s on Bob\'s node, signed by the phone\'s keys', phone_posts, phone)

        def phone_comments_and_reacts():
            phone.js(f"location.hash = '#/post/{state['post']}'")
            box = phone.wait_css('#comment-text')
            phone.type(box, 'Signed on the phone')
            tap(phone, t, '#comment-form button[type=submit]')
            comments = t.wait_for('the comment on Bob', lambda: [c for c in bob.get(f"/api/posts/{state['post']}")['comments']
                                                                 if c['text'] == 'Signed on the phone'], 30)
            assert comments[0]['authorName'] == 'Alice', comments
            tap(phone, t, "[aria-label='Reactions to the post'] button[data-reaction='heart']")
            t.wait_for('the heart on Bob', lambda: any(r['name'] == 'heart' and r['count'] == 1
                                                       for r in bob.get(f"/api/posts/{state['post']}")['reactions']), 30)
            return 'comment and ❤️ on Bob, by Alice'
        steps.run('the phone comments and reacts as Alice', phone_comments_and_reacts, phone)

        def phone_edits_and_deletes():
            tap(phone, t, '#edit-post')
            box = phone.wait_css('#caption-edit')
            phone.clear(box)
            phone.type(box, 'From my phone, edited')
            tap(phone, t, '#save-edit')
            t.wait_for('the new caption on Bob', lambda: bob.get(f"/api/posts/{state['post']}")['caption']
                       == 'From my phone, edited', 30)
            phone.js('window.confirm = () => true;')
            tap(phone, t, '#delete-post')
            t.wait_for('the post gone from Bob', lambda: not bob.has_post(state['post']), 30)
            return 'an edit and a delete signed on the phone, applied on Bob'
        steps.run('the phone edits its post\'s caption and deletes it', phone_edits_and_deletes, phone)

        def phone_is_not_owner():
            answers = phone.js_async(
                "const done = arguments[0]; const ask = (m, p, b) => fetch(p, {method: m, headers: {'Content-Type':"
                " 'application/json'}, body: b && JSON.stringify(b)}).then(async r => [r.status, (await r.json()).error]);"
                " Promise.all([ask('GET', '/api/phone'), ask('PUT', '/api/name', {name: 'Gina'}),"
                " ask('POST', '/api/browser/link', {}), ask('GET', '/api/requests')]).then(done)")
            assert all(answer == [403, 'owner_only'] for answer in answers), answers
            assert alice.get('/api/status')['name'] == 'Alice'
            phone.js("location.hash = '#/settings'")
            phone.wait_css('#linked-as')
            return f'{len(answers)} owner routes: 403 owner_only; Settings says whose device it is'
        steps.run('the phone has none of the owner\'s powers', phone_is_not_owner, phone)

        def new_session_by_key():
            # As after a restart of the node, which forgets its sessions: the page proves its key again.
            name = f"continuum-browser-{alice.api.rsplit(':', 1)[1]}"
            before = phone.cmd('GET', f'/cookie/{name}')['value']
            ended = phone.js_async("const done = arguments[0]; fetch('/api/browser/session', {method: 'DELETE'})"
                                   ".then(() => fetch('/api/browser/me')).then(r => done(r.status))")
            assert ended == 401, f'the ended session still answers: {ended}'
            phone.js("location.hash = '#/'")
            phone.cmd('POST', '/refresh', {})
            t.wait_for('the timeline on the phone', lambda: phone.js("return document.querySelector('#grid') !== null"), 20)
            cookies = lambda: {cookie['name']: cookie['value'] for cookie in phone.cmd('GET', '/cookie')}
            errors = lambda: phone.js("return [...document.querySelectorAll('#errors .error-text')].map(e => e.textContent)")
            t.wait_for(f'a new session cookie (errors: {errors()})', lambda: cookies().get(name, before) != before, 10)
            status = phone.js_async("const done = arguments[0]; fetch('/api/browser/me').then(r => done(r.status))")
            assert status == 200, status
            return 'without its cookie, the page signed the node\'s challenge and got a new session'
        steps.run('a phone without its session opens a new one with its key, no new link', new_session_by_key, phone)

        def owner_removes_phone():
            phone.js("location.hash = '#/'")
            t.wait_for('live updates on the phone', lambda: phone.text(phone.find('#live-status')) == 'live', 10)
            alice.send('DELETE', f"/api/devices/{state['device']}")
            # Its open event stream ends too (at its next event or keep-alive, within 15 s), and does not come back.
            t.wait_for('the phone\'s live updates cut', lambda: phone.text(phone.find('#live-status')) != 'live', 25)
            status = phone.js_async("const done = arguments[0]; fetch('/api/browser/me').then(async r =>"
                                    " done([r.status, (await r.json()).error]))")
            assert status == [401, 'device_removed'], status
            return 'its open event stream ended; its next request: 401 device_removed'
        steps.run('the owner removes the phone; its next request is refused', owner_removes_phone, phone)
        guest_steps(steps, t, alice, bob, owner, driver, artifacts, fixtures, state)
    finally:
        owner.quit()
        phone.quit()
        alice.stop()
        bob.stop()


def ask_all(browser, requests):
    """Each (method, path, body) fetched from the page with its session; their [status, error code]."""
    return browser.js_async(
        "const done = arguments[1]; Promise.all(arguments[0].map(([m, p, b]) => fetch(p, {method: m, headers:"
        " {'Content-Type': 'application/json'}, body: b && JSON.stringify(b)}).then(async r =>"
        " [r.status, (await r.json()).error]))).then(done)", requests)


def guest_steps(steps, t, alice, bob, owner, driver, artifacts, fixtures, state):
    """A guest at Alice's party: a third window at phone size opens the guest link's QR code, picks a name, posts,
    comments and reacts as itself; it has none of the owner's powers; the owner removes it."""
    party = alice.send('POST', '/api/groups', {'name': 'Party'})['id']
    code = alice.send('POST', f'/api/groups/{party}/invites', {'host': '127.0.0.1'})['code']
    bob.send('POST', '/api/join', {'code': code})
    # Alice posts once her node counts Bob in the group: a post it stores before that reaches him at the next
    # anti-entropy round (60 s), not live, and the comment below waits 30 s for it on Bob.
    bob_log = t.wait_for('Party on Bob', lambda: next((g['log'] for g in bob.get('/api/groups')['groups']
                                                         if g['id'] == party), None), 15)
    t.wait_for('Bob in Party on Alice', lambda: bob_log in [m['log'] for m in
                                                            alice.get(f'/api/groups/{party}/members')['members']], 15)
    alices = t.post_photo(alice, fixtures / 'lake.png', 'Alice\'s cake', group='Party')['id']
    guest = t.Browser.start(driver, *t.PHONE)
    try:
        def guest_joins_and_posts():
            owner.get(alice.page_url.split('?')[0] + '?token=' + alice.token + '#/settings')
            t.wait_for('Party in the guest form', lambda: owner.js(
                "return [...document.querySelectorAll('#guest-group option')].some(o => o.value === arguments[0])", party), 15)
            owner.js("document.querySelector('#guest-group').value = arguments[0]", party)
            tap(owner, t, '#make-guest-link')
            t.wait_for('the guest QR code drawn', lambda: owner.js(
                "const i = document.querySelector('#guest-link-qr'); return i && i.complete && i.naturalWidth > 0"))
            url = owner.text(owner.find('#guest-link-url'))
            qr = owner.find('#guest-link-qr')
            owner.js("arguments[0].scrollIntoView({block: 'center'})", {t.ELEMENT: qr})
            png = artifacts / 'guest-link-qr.png'
            png.write_bytes(base64.b64decode(owner.cmd('GET', f'/element/{qr}/screenshot')))
            decoded = subprocess.run(['zbarimg', '--raw', '-q', str(png)], capture_output=True, text=True,
                                     timeout=30).stdout.strip()
            assert decoded == url and '#guest=' in url and 'token' not in url, f'QR {decoded!r}, page {url!r}'
            guest.get(decoded)
            box = guest.wait_css('#guest-form:not([hidden]) #guest-name', 15)
            guest.type(box, 'Gina')
            tap(guest, t, '#join-as-guest')
            t.wait_for('the timeline for the guest', lambda: guest.js("return document.querySelector('#grid') !== null"), 20)
            state['guest'] = guest.js("return localStorage.getItem('continuum-browser-device')")
            nav = guest.js("return [...document.querySelectorAll('nav a[data-route]')].map(a => a.dataset.route)")
            assert nav == ['timeline', 'new'], nav
            guest.js("location.hash = '#/new'")
            guest.choose_files(guest.wait_css('#photo-input'), *((fixtures / name).resolve() for name in ['waterfall.jpg', 'forest.webp']))
            t.wait_for('a row for each', lambda: len(guest.find_all('#batch li.batch-item')) == 2, 10)
            guest.type(guest.find('#caption'), 'Gina at the party')
            tap(guest, t, '#upload')
            posts = t.wait_for('two posts by Gina on Bob', lambda: (found := [p['id'] for p in bob.get('/api/feed?limit=20')['posts']
                                                                           if p['authorName'] == 'Gina']) and len(found) == 2 and found, 60)
            state['guest_posts'] = posts
            leaked = t.wait_for('the guest in the list', lambda: alice.get('/api/guests')['guests'])
            assert leaked[0]['name'] == 'Gina' and leaked[0]['posts'] == 2, leaked
            keys = exported_keys(alice.data) + exported_keys(bob.data)
            assert not keys, f'private keys in the nodes\' files: {keys}'
            return f'QR decodes to {url.split("#")[0]}#guest=…; two photos posted at once show on Bob by Gina; no private key stored'
        if not steps.run('a guest scans the guest link, picks a name, and posts two photos at once', guest_joins_and_posts, guest):
            return

        def guest_hears_its_group_live():
            guest.js("location.hash = '#/'")
            guest.wait_css('#grid')
            loaded = guest.js('return window.continuumLoadedAt')
            grid = lambda: guest.js("return [...document.querySelectorAll('#grid li.tile')].map(t => t.dataset.id)")
            # What the stream itself says to the guest (events carry captions): its group's alone.
            guest.js("window.heard = []; const s = new EventSource('/api/events');"
                     " for (const k of ['post', 'comment', 'syncFinished', 'peerJoined']) s.addEventListener(k, e => heard.push(k + ' ' + e.data));")
            hidden = t.post_photo(bob, fixtures / 'lake.png', 'Not for the guests', group='browser-tests-phone')['id']
            shown = t.post_photo(bob, fixtures / 'forest.webp', 'For the guests too', group='Party')['id']
            t.wait_for('both of Bob\'s posts on Alice', lambda: alice.has_post(hidden) and alice.has_post(shown), 30)
            t.wait_for('Bob\'s Party post in the guest\'s grid, live', lambda: shown in grid(), 30)
            assert hidden not in grid(), 'a post of another group reached the guest\'s grid'
            heard = t.wait_for('the post event heard', lambda: (h := guest.js('return window.heard')) and
                               any('For the guests too' in e for e in h) and h, 15)
            assert not any('Not for the guests' in e or e.startswith(('syncFinished', 'peerJoined')) for e in heard), heard
            assert guest.js('return window.continuumLoadedAt') == loaded, 'the page was reloaded'
            answer = ask_all(guest, [['GET', f'/api/posts/{hidden}', None]])
            assert answer == [[404, 'unknown_post']], answer
            return (f'Bob\'s Party post appeared without a reload; his post in the other group did not, and reads as 404; '
                    f'the stream said {len(heard)} event(s), none of the other group or of the node\'s peers')
        steps.run('the guest sees its group\'s new posts live, and no other group\'s', guest_hears_its_group_live, guest)

        def invite_opened_on_phone():
            made = alice.send('POST', f'/api/groups/{party}/invites', {'host': '127.0.0.1'})
            assert made['url'].endswith(f"#invite={made['code']}") and made['url'].startswith('https://'), made['url']
            guest.get('about:blank')  # as a phone's camera opens it: a fresh page load
            guest.get(made['url'])
            said = guest.text(guest.wait_css('#invite-page-command', 15))
            assert said == f"continuum-node join {made['code']}", said
            assert 'guest link' in guest.text(guest.find('#invite-page-phone'))
            assert not guest.find_all('#grid'), 'the invite page loaded the timeline'
            guest.get(made['url'].split('#')[0] + '#/')
            t.wait_for('the guest\'s timeline again', lambda: guest.js("return document.querySelector('#grid') !== null"), 20)
            return f'the invite QR\'s address ({made["url"].split("#")[0]}#invite=…) says: "{said[:40]}…", and what a phone does instead'
        steps.run('an invite\'s QR address opened on a phone says what it is for', invite_opened_on_phone, guest)

        def guest_comments_and_reacts():
            # Alice's post, made right after Bob's join, came live to Bob before the group record that makes its log
            # known there: held back, it was asked for again by a round alone, which the sender answers without what
            # it sent down the connection already, and came only at the next anti-entropy round (up to 60 s). Bob
            # now asks for it by a REQUEST of its position (PROTOCOL.md §7.8.6).
            t.wait_for("Alice's Party post on Bob", lambda: bob.get(f'/api/posts/{alices}')['id'] == alices, 30)
            guest.js(f"location.hash = '#/post/{alices}'")
            box = guest.wait_css('#comment-text', 15)
            guest.type(box, 'Lovely cake!')
            tap(guest, t, '#comment-form button[type=submit]')
            comments = t.wait_for('the comment on Bob', lambda: [c for c in bob.get(f'/api/posts/{alices}')['comments']
                                                                 if c['text'] == 'Lovely cake!'], 30)
            assert comments[0]['authorName'] == 'Gina', comments
            tap(guest, t, "[aria-label='Reactions to the post'] button[data-reaction='heart']")
            t.wait_for('the heart on Bob', lambda: any(r['name'] == 'heart' and r['count'] == 1
                                                       for r in bob.get(f'/api/posts/{alices}')['reactions']), 30)
            shown = guest.js("return [...document.querySelectorAll('button')].filter(b => ['edit-post', 'delete-post']"
                             ".includes(b.id) && !b.hidden).length")
            assert shown == 0, 'the guest is offered to edit or delete Alice\'s post'
            return 'comment and ❤️ on Alice\'s post, shown on Bob by Gina; no edit or delete offered on it'
        steps.run('the guest comments and reacts as itself', guest_comments_and_reacts, guest)

        def guest_is_not_owner():
            bob_log = next(g['log'] for g in bob.get('/api/groups')['groups'] if g['id'] == party)
            answers = ask_all(guest, [['DELETE', f'/api/posts/{alices}', None], ['GET', '/api/phone', None],
                                      ['PUT', '/api/name', {'name': 'Gina'}], ['POST', f'/api/groups/{party}/invites', {}],
                                      ['DELETE', f'/api/groups/{party}/members/{bob_log}', None], ['GET', '/api/guests', None]])
            assert all(answer == [403, 'not_for_guests'] for answer in answers), answers
            assert alice.has_post(alices) and alice.get('/api/status')['name'] == 'Alice'
            members = [m['log'] for m in alice.get(f'/api/groups/{party}/members')['members'] if m.get('removedThrough') is None]
            assert bob_log in members, members
            return f'{len(answers)} tries (delete Alice\'s post, token, name, invite, revoke, guests): 403 not_for_guests; nothing changed'
        steps.run('the guest\'s tries at the owner\'s powers get 403, and nothing changes', guest_is_not_owner, guest)

        def owner_removes_guest():
            owner.get(alice.page_url.split('?')[0] + '?token=' + alice.token + '#/settings')
            owner.js('window.confirm = () => true;')
            tap(owner, t, f".guest-remove[data-device='{state['guest']}']", 15)
            t.wait_for('Gina removed', lambda: alice.get('/api/guests')['guests'][0]['state'] == 'removed', 15)
            guest.js(f"location.hash = '#/post/{alices}'")
            box = guest.wait_css('#comment-text', 15)
            guest.type(box, 'Still here?')
            tap(guest, t, '#comment-form button[type=submit]')
            said = t.wait_for('the refusal shown', lambda: guest.js(
                "return [...document.querySelectorAll('#errors .error-text, .form-error:not([hidden])')].map(e => e.textContent).join(' ')"), 15)
            assert 'removed' in said, said
            status = ask_all(guest, [['GET', '/api/browser/me', None]])
            assert status == [[401, 'device_removed']], status
            assert not [c for c in alice.get(f'/api/posts/{alices}')['comments'] if c['text'] == 'Still here?']
            return f'its next comment refused ("{said[:70]}"); its session: 401 device_removed'
        steps.run('the owner removes the guest; its next write is refused', owner_removes_guest, guest)
    finally:
        guest.quit()


def describe(value):
    return json.dumps(value)[:200]
