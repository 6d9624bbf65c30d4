// Records as PROTOCOL.md §2 lays them out, made and signed in the browser: a linked browser (browser.js) signs its
// person's records with its own Ed25519 keys (WebCrypto), and the node only checks and stores them. Big-endian
// integers, no variable lengths; the header commits to the content by its SHA-256; the signature covers the header.

const utf8 = new TextEncoder();

/** Bytes → lowercase hex. */
export const hex = (bytes) => Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');

/** Hex → bytes. */
export function fromHex(text) {
  const bytes = new Uint8Array(text.length / 2);
  for (let i = 0; i < bytes.length; i += 1) bytes[i] = parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

/** Bytes → base64url without padding. */
export function base64url(bytes) {
  let text = '';
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** base64url → bytes. */
export function fromBase64url(text) {
  const plain = atob(text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4));
  return Uint8Array.from(plain, (char) => char.charCodeAt(0));
}

export const concat = (...parts) => {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) { out.set(part, at); at += part.length; }
  return out;
};

export const text = (value) => utf8.encode(value);

export async function sha256(bytes) {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
}

/** Writes the fixed-size fields of §2 (Conventions): u8 … u64, i32, i64, byte strings and string8/16. */
class Writer {
  constructor() { this.parts = []; }
  number(size, write) {
    const view = new DataView(new ArrayBuffer(size));
    write(view);
    this.parts.push(new Uint8Array(view.buffer));
    return this;
  }
  u8(value) { return this.number(1, (view) => view.setUint8(0, value)); }
  u16(value) { return this.number(2, (view) => view.setUint16(0, value)); }
  u32(value) { return this.number(4, (view) => view.setUint32(0, value)); }
  i32(value) { return this.number(4, (view) => view.setInt32(0, value)); }
  u64(value) { return this.number(8, (view) => view.setBigUint64(0, BigInt(value))); }
  i64(value) { return this.number(8, (view) => view.setBigInt64(0, BigInt(value))); }
  bytes(value) { this.parts.push(value); return this; }
  string8(value) { const bytes = text(value); return this.u8(bytes.length).bytes(bytes); }
  string16(value) { const bytes = text(value); return this.u16(bytes.length).bytes(bytes); }
  done() { return concat(...this.parts); }
}

/**
 * The 16 random bytes every content starts with (§2.5). `random.salt` may be replaced, by the browser tests alone,
 * to encode the protocol's test vectors (PROTOCOL.md §8), whose salts are given.
 */
export const random = { salt: () => crypto.getRandomValues(new Uint8Array(16)) };
const salt = () => random.salt();

export const KIND = { profile: 1, post: 2, comment: 3, edit: 4, delete: 5, account: 8, log: 11, reaction: 13 };

/** §2.8's references of kinds 8 … 255: `context` (a post id, or none), then `data` with its u16 length. */
function opaqueReferences(context, data) {
  return new Writer().bytes(context ?? new Uint8Array(32)).u16(data.length).bytes(data).done();
}

/** A profile: its name (§2.5). */
export const profile = (name) => ({ kind: KIND.profile, references: new Uint8Array(0),
  content: new Writer().bytes(salt()).string8(name).done() });

/** A comment on `post` (its id's bytes). */
export const comment = (post, body) => ({ kind: KIND.comment, references: post,
  content: new Writer().bytes(salt()).string16(body).done() });

/**
 * A post: `photo` as the node answered for it (`POST /api/browser/photos`: sha256, bytes, mediaType, width, height,
 * takenAt, thumbnail, latitudeE7, longitudeE7) and its caption (§2.5).
 */
export function post(caption, photo) {
  const writer = new Writer().bytes(salt()).string16(caption)
    .bytes(fromHex(photo.sha256)).u64(photo.bytes).u8(photo.mediaType).u32(photo.width).u32(photo.height)
    .u8((photo.takenAt != null ? 1 : 0) | (photo.thumbnail ? 2 : 0));
  if (photo.takenAt != null) writer.i64(photo.takenAt);
  if (photo.thumbnail) writer.bytes(fromHex(photo.thumbnail.sha256)).u32(photo.thumbnail.bytes);
  if (photo.latitudeE7 != null) writer.u8(1).i32(photo.latitudeE7).i32(photo.longitudeE7);
  else writer.u8(0);
  return { kind: KIND.post, references: new Uint8Array(0), content: writer.done() };
}

/** A delete (§2.5) of `ids` (record ids' hex): the author's own posts and comments, or comments on its posts. */
export function deletion(ids) {
  const sorted = [...new Set(ids.map((id) => id.toLowerCase()))].sort();
  const writer = new Writer().u16(sorted.length);
  for (const id of sorted) writer.bytes(fromHex(id));
  return { kind: KIND.delete, references: writer.done(), content: new Uint8Array(0) };
}

/**
 * An edit (§2.5) of `post` (its id's bytes): `caption` when given; `location` `{ latitude, longitude }` sets it,
 * `null` removes it, undefined leaves it.
 */
export function edit(post, { caption, location }) {
  const flags = (caption !== undefined ? 1 : 0) | (location ? 4 : 0) | (location === null ? 8 : 0);
  const writer = new Writer().bytes(salt()).u8(flags);
  if (caption !== undefined) writer.string16(caption);
  if (location) writer.i32(Math.round(location.latitude * 1e7)).i32(Math.round(location.longitude * 1e7));
  return { kind: KIND.edit, references: post, content: writer.done() };
}

/** A reaction (§2.9): `code` 0 (taken back) … 6, to `post`, or to `comment` on it. */
export const reaction = (post, comment, code) => ({ kind: KIND.reaction,
  references: opaqueReferences(post, comment ?? new Uint8Array(0)),
  content: new Writer().bytes(salt()).u8(code).done() });

/** The first record of a linked browser's account log: it joins `account` (§2.10). */
export const joining = (account) => ({ kind: KIND.account,
  references: opaqueReferences(null, concat(account, new Uint8Array([0]))), content: new Uint8Array(0) });

/** What a device consents to when it is added to `account` (§2.10, device-add). */
export const consentMessage = (account, device) => concat(text('continuum-device-consent-v3'), account, device);

/** What a log key signs to be declared as `device`'s log in `group` for `account` (§2.10, kind 11). */
export const declarationMessage = (account, group, device) =>
  concat(text('continuum-log-declaration-v3'), account, group, device);

/** A log declaration (kind 11), signed by the device: `log`'s own signature of it inside. */
export const declaration = (account, group, log, signature) => ({ kind: KIND.log,
  references: opaqueReferences(null, concat(account, group, log, signature)), content: new Uint8Array(0) });

/** Signs `bytes` with `privateKey` (Ed25519). */
export async function sign(privateKey, bytes) {
  return new Uint8Array(await crypto.subtle.sign({ name: 'Ed25519' }, privateKey, bytes));
}

/**
 * A whole record (§2.1): the header of `body` by `author` at `sequence` after `previous` (a record id's bytes, or
 * null at sequence 1), signed with `privateKey`, then the content.
 */
export async function makeRecord(body, { author, privateKey, sequence, previous, createdAt = Date.now() }) {
  const header = new Writer().bytes(text('CNTM')).u8(2).u8(body.kind).bytes(author).u64(sequence);
  if (sequence > 1) header.bytes(previous);
  header.i64(createdAt).bytes(body.references).u32(body.content.length).bytes(await sha256(body.content));
  const signed = header.done();
  return concat(signed, await sign(privateKey, signed), body.content);
}
