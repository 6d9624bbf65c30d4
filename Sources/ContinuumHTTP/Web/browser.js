// This browser as a device of its person's account (Docs/WEB.md, "A phone as a device"). The owner's Settings make
// a link (a URL with #link=CODE, and its QR); opened here, the page makes an Ed25519 key with WebCrypto (not
// extractable, kept in IndexedDB for this node's address), the node adds it to the account, and from then on this
// browser signs its person's posts, comments and reactions itself (records.js). The node never sees the private key:
// it gets a session (a cookie) each time the page proves it holds the key.

import { ApiError, api, sendForm, session, signedWrites } from './api.js';
import * as records from './records.js';

const DB_NAME = 'continuum-browser';
const FLAG = 'continuum-browser-device';

/** Set once a session is open: `{ device, account, name }` (hex ids). Null on the owner's own browser. */
export const linked = { current: null };

function database() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DB_NAME, 1);
    request.onupgradeneeded = () => request.result.createObjectStore('keys');
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

async function keyStore(mode, use) {
  const db = await database();
  try {
    return await new Promise((resolve, reject) => {
      const transaction = db.transaction('keys', mode);
      const request = use(transaction.objectStore('keys'));
      transaction.oncomplete = () => resolve(request.result);
      transaction.onerror = () => reject(transaction.error);
    });
  } finally {
    db.close();
  }
}

const loadKey = (name) => keyStore('readonly', (store) => store.get(name));
const saveKey = (name, key) => keyStore('readwrite', (store) => store.put(key, name));

/** A new Ed25519 key pair whose private key cannot be exported: `{ privateKey, public }` (public: its 32 bytes). */
async function newKey() {
  const pair = await crypto.subtle.generateKey({ name: 'Ed25519' }, false, ['sign', 'verify']);
  const raw = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey));
  return { privateKey: pair.privateKey, public: raw };
}

/** Whether WebCrypto can make Ed25519 keys here (it needs a secure context: https, or localhost). */
export function canSign() {
  return window.isSecureContext && !!crypto.subtle;
}

/** Whether this browser holds a device key for this node (set at link; read without opening IndexedDB). */
export const hasDevice = () => localStorage.getItem(FLAG) !== null;

/**
 * At start: with a device key, opens a session by signing the node's challenge (unless the cookie's session still
 * stands), and fills `linked`. Resolves to true when this browser is a linked device.
 */
export async function start() {
  if (!hasDevice()) return false;
  try {
    adopt(await api('/api/browser/me'));
    return true;
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 401) throw error;
  }
  const device = await loadKey('device');
  if (!device) { localStorage.removeItem(FLAG); return false; }
  const { nonce } = await api('/api/browser/challenge', { method: 'POST', json: { device: records.hex(device.public) } });
  const message = records.concat(records.text('continuum-web-session-v1'), records.fromBase64url(nonce), device.public);
  const signature = await records.sign(device.privateKey, message);
  await api('/api/browser/session', { method: 'POST',
    json: { device: records.hex(device.public), nonce, signature: records.base64url(signature) } });
  adopt(await api('/api/browser/me'));
  return true;
}

/** Takes `me` (GET /api/browser/me) as who this page is: its account, and for a guest its one group. */
function adopt(me) {
  linked.current = me;
  session.account = me.account;
  signedWrites.current = writes;
  if (me.guest) {
    session.guest = true;
    session.groups = me.groups.map((group) => ({ id: group.id, name: group.name, log: group.log, admin: false }));
    session.logs = new Set(me.groups.map((group) => group.log).filter(Boolean));
  }
}

/** Which group a guest link opens: `{ group, groupName, host }`. */
export const inspectGuest = (code) => api('/api/browser/guest/inspect', { method: 'POST', json: { code } });

/**
 * Joins `group` as a guest named `name` with the link `code`: makes this browser's device key (which founds its own
 * account, kind 8 with no account named) and its log key for the group; the node adds the log to the group; then the
 * device declares the log (kind 11) and the name is signed in the log, as its first record.
 */
export async function acceptGuest(code, name, group) {
  if (hasDevice()) {
    throw new ApiError(409, 'already_linked', 'This browser already signs as someone on this node (a linked phone or '
      + 'a guest): open the guest link in another browser, or a private window.');
  }
  const [device, log] = [await newKey(), await newKey()];
  const founding = await records.makeRecord(records.joining(new Uint8Array(32)),
    { author: device.public, privateKey: device.privateKey, sequence: 1, previous: null });
  const answer = await api('/api/browser/guest/accept', { method: 'POST', json: {
    code, name, device: records.hex(device.public), log: records.hex(log.public), record: records.base64url(founding),
  } });
  // Kept once the node let it in: a refused join leaves this browser's keys as they were.
  await saveKey('device', device);
  await saveKey(`log:${group}`, log);
  localStorage.setItem(FLAG, records.hex(device.public));
  adopt(await api('/api/browser/me'));
  // The log declared as this device's (both keys sign), so that what it writes is the guest's account's.
  const [accountBytes, groupBytes] = [records.fromHex(answer.account), records.fromHex(group)];
  const signature = await records.sign(log.privateKey, records.declarationMessage(accountBytes, groupBytes, device.public));
  await signAndSend(device, records.declaration(accountBytes, groupBytes, log.public, signature));
  await signAndSend(log, records.profile(answer.name ?? name));
  return answer;
}

/** Whose account the link code adds this browser to: `{ account, name }`. */
export const inspectLink = (code) => api('/api/browser/link/inspect', { method: 'POST', json: { code } });

/** Makes this browser's device key and links it with `code`: consent, joining record, session. */
export async function acceptLink(code, account) {
  const device = await newKey();
  const accountBytes = records.fromHex(account);
  const consent = await records.sign(device.privateKey, records.consentMessage(accountBytes, device.public));
  const joining = await records.makeRecord(records.joining(accountBytes),
    { author: device.public, privateKey: device.privateKey, sequence: 1, previous: null });
  const answer = await api('/api/browser/link/accept', { method: 'POST', json: {
    code, device: records.hex(device.public), consent: records.base64url(consent), record: records.base64url(joining),
  } });
  // Kept once the node added it: a refused link leaves this browser's keys as they were.
  await saveKey('device', device);
  localStorage.setItem(FLAG, records.hex(device.public));
  linked.current = await api('/api/browser/me');
  return answer;
}

/**
 * Signs `body` with `key` at the next place of its log (read from the node) and sends it; a log that moved on in
 * between (another tab) is read again and signed anew, once. Resolves with the node's answer (`{ id, … }`).
 */
async function signAndSend(key, body) {
  for (let attempt = 0; ; attempt += 1) {
    const head = await api(`/api/browser/logs/${records.hex(key.public)}`);
    const bytes = await records.makeRecord(body, { author: key.public, privateKey: key.privateKey,
      sequence: head.sequence + 1, previous: head.head ? records.fromHex(head.head) : null });
    try {
      return await api('/api/browser/records', { method: 'POST', json: { record: records.base64url(bytes) } });
    } catch (error) {
      if (attempt > 0 || !(error instanceof ApiError) || error.code !== 'stale_log') throw error;
    }
  }
}

/**
 * This browser's log key in `group`: made, declared (a kind-11 record signed by the device key, with the log key's
 * own signature inside) and named with the person's name the first time this browser writes there.
 */
async function logFor(group) {
  const me = linked.current = await api('/api/browser/me');
  const place = me.groups.find((candidate) => candidate.id === group);
  if (!place) throw new ApiError(403, 'not_member', 'This browser\'s account is not in that group.');
  let key = await loadKey(`log:${group}`);
  if (place.log) {
    if (!key || records.hex(key.public) !== place.log) {
      throw new ApiError(409, 'key_missing', 'This browser lost its key for that group (its site data was cleared); '
        + 'ask the owner to remove this device and link it again.');
    }
    return key;
  }
  if (!key) { key = await newKey(); await saveKey(`log:${group}`, key); }
  const device = await loadKey('device');
  const [account, groupBytes] = [records.fromHex(me.account), records.fromHex(group)];
  const signature = await records.sign(key.privateKey, records.declarationMessage(account, groupBytes, device.public));
  await signAndSend(device, records.declaration(account, groupBytes, key.public, signature));
  if (me.name) await signAndSend(key, records.profile(me.name));
  return key;
}

/** The group a new post goes to: the form's, else the account's only group. */
function groupOf(formData) {
  const chosen = formData.get('group');
  if (chosen) return chosen;
  const groups = linked.current?.groups ?? [];
  if (groups.length === 1) return groups[0].id;
  throw new ApiError(400, 'missing_group', groups.length ? 'Choose the group to share it with.'
    : 'The node is in no group yet: a phone shares only in groups.', 'group');
}

/**
 * A post signed here: the photo goes to the node (`POST /api/browser/photos`, with progress), which keeps it and
 * answers what the record says of it; then the post is signed and sent. Same shape as api.js's uploadPost.
 */
function uploadPost(formData, onProgress) {
  const staged = sendForm(formData, onProgress, '/api/browser/photos');
  const promise = staged.promise.then(async (photo) => {
    const key = await logFor(groupOf(formData));
    const answer = await signAndSend(key, records.post(formData.get('caption'), photo));
    return api(`/api/posts/${answer.id}`);
  });
  return { promise, abort: staged.abort };
}

/** A comment signed here on `post` (its JSON); resolves with the comment as the node shows it. */
async function comment(post, body) {
  if (!post.group) throw new ApiError(403, 'not_member', 'This post is not in a group: only its node can comment.');
  const key = await logFor(post.group);
  const answer = await signAndSend(key, records.comment(records.fromHex(post.id), body));
  const fresh = await api(`/api/posts/${post.id}`);
  return fresh.comments.find((candidate) => candidate.id === answer.id) ?? { id: answer.id, post: post.id, text: body };
}

/** The reactions' names in their codes' order (PROTOCOL.md §2.9: 1 … 6; 0 takes back). */
const REACTION_CODES = ['heart', 'thumbsup', 'laugh', 'wow', 'sad', 'thanks'];

/** A reaction signed here: `name` (null: taken back) to the post or comment `id`, on `postId`. */
async function react(kind, id, postId, name) {
  const post = await api(`/api/posts/${postId}`);
  if (!post.group) throw new ApiError(403, 'not_member', 'This post is not in a group: only its node can react.');
  const key = await logFor(post.group);
  const code = name === null ? 0 : REACTION_CODES.indexOf(name) + 1;
  const target = kind === 'comment' ? records.fromHex(id) : null;
  await signAndSend(key, records.reaction(records.fromHex(postId), target, code));
  const fresh = await api(`/api/posts/${postId}`);
  const shown = kind === 'comment' ? fresh.comments.find((candidate) => candidate.id === id) ?? {} : fresh;
  return { reactions: shown.reactions ?? [], myReaction: name };
}

/** Deletes `ids` (posts of this person's account), a delete signed here for each group they are in. */
async function remove(ids) {
  const byGroup = new Map();
  for (const id of ids) {
    const post = await api(`/api/posts/${id}`);
    if (!post.group) throw new ApiError(403, 'not_member', 'A post kept on the node alone is deleted on the node.');
    byGroup.set(post.group, [...(byGroup.get(post.group) ?? []), post.id]);
  }
  for (const [group, targets] of byGroup) await signAndSend(await logFor(group), records.deletion(targets));
}

/** An edit signed here of `id`: `change` as PATCH /api/posts/{id} takes it (caption, location). */
async function edit(id, change) {
  const post = await api(`/api/posts/${id}`);
  if (!post.group) throw new ApiError(403, 'not_member', 'A post kept on the node alone is edited on the node.');
  await signAndSend(await logFor(post.group), records.edit(records.fromHex(post.id), change));
  return api(`/api/posts/${id}`);
}

const writes = { uploadPost, comment, react, remove, edit };
