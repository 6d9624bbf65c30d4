// The HTTP API (Docs/API.md): fetch helpers, errors with the server's message, the access token.

/** An API refusal: `status`, the API's `code` (`error`), its `message` for people and the `field` at fault. */
export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field ?? null;
  }
}

/**
 * `?token=` in the page's URL: keep it in the cookie the API reads (continuum-token-PORT, SameSite=Strict, path=/), then take it out of
 * the address bar and the history so that it is not bookmarked or shared with a screenshot.
 */
export function adoptTokenFromURL() {
  const url = new URL(window.location.href);
  const token = url.searchParams.get('token');
  if (token === null) return;
  const secure = window.location.protocol === 'https:' ? '; Secure' : '';
  // One cookie per port (continuum-token-7421): a browser sends a host's cookies to all its ports.
  const name = window.location.port ? `continuum-token-${window.location.port}` : 'continuum-token';
  document.cookie = `${name}=${encodeURIComponent(token)}; SameSite=Strict; path=/${secure}`;
  url.searchParams.delete('token');
  window.history.replaceState(window.history.state, '', url.pathname + url.search + url.hash);
}

async function errorFrom(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    // Not JSON (a proxy, a crash): say what we know.
  }
  if (body && typeof body.message === 'string') {
    return new ApiError(response.status, body.error ?? 'error', body.message, body.field);
  }
  return new ApiError(response.status, 'http_' + response.status,
    `The node answered ${response.status} ${response.statusText || ''}`.trim() + '.');
}

/** GET or send JSON; returns the parsed body; throws ApiError (also for a network failure). */
export async function api(path, { method = 'GET', json, signal } = {}) {
  const init = { method, signal, credentials: 'same-origin', headers: { Accept: 'application/json' } };
  if (json !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(json);
  }
  return responseBody(fetch(path, init));
}

/** The body of a fetch() already under way (see index.html), with the same errors as api(). */
export async function responseBody(pending) {
  let response;
  try {
    response = await pending;
  } catch (error) {
    if (error.name === 'AbortError') throw error;
    throw new ApiError(0, 'network', 'The node cannot be reached. Is continuum-node still running?');
  }
  if (!response.ok) throw await errorFrom(response);
  if (response.status === 204) return null;
  return response.json();
}

/** Builds a query string from an object, leaving out null, undefined, false and ''. */
export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === null || value === undefined || value === false || value === '') continue;
    search.set(key, String(value));
  }
  const text = search.toString();
  return text ? '?' + text : '';
}

export const photoURL = (sha256) => `/api/photos/${sha256}`;
export const thumbnailURL = (sha256) => `/api/photos/${sha256}/thumbnail`;
export const downloadURL = (sha256) => `/api/photos/${sha256}?download=1`;

/**
 * The writes a linked browser signs itself (browser.js sets them at start); null on the owner's browser, where the
 * node signs. `uploadPost(formData, onProgress)`, `comment(post, text)`, `react(kind, id, post, group, name)`.
 */
export const signedWrites = { current: null };

/**
 * A new post: POST /api/posts as multipart/form-data with XMLHttpRequest, for its upload progress; on a linked
 * browser, the photo goes to the node and the post is signed here (browser.js). `onProgress(loaded, total)`;
 * resolves with the new post, rejects with an ApiError. Returns { promise, abort }.
 */
export function uploadPost(formData, onProgress) {
  if (signedWrites.current) return signedWrites.current.uploadPost(formData, onProgress);
  return sendForm(formData, onProgress, '/api/posts');
}

/**
 * POST `path` as multipart/form-data with XMLHttpRequest, for its upload progress: `onProgress(loaded, total)`;
 * resolves with the answer's JSON, rejects with an ApiError. Returns { promise, abort }.
 */
export function sendForm(formData, onProgress, path) {
  const xhr = new XMLHttpRequest();
  const promise = new Promise((resolve, reject) => {
    xhr.open('POST', path);
    xhr.responseType = 'text';
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(event.loaded, event.total);
    };
    xhr.onload = () => {
      let body = null;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        // handled below
      }
      if (xhr.status >= 200 && xhr.status < 300 && body) {
        resolve(body);
      } else if (body && typeof body.message === 'string') {
        reject(new ApiError(xhr.status, body.error ?? 'error', body.message, body.field));
      } else {
        reject(new ApiError(xhr.status, 'http_' + xhr.status, `The node answered ${xhr.status} ${xhr.statusText}.`));
      }
    };
    xhr.onerror = () => reject(new ApiError(0, 'network',
      'The upload did not reach the node (connection lost, or the node refused it before reading it all).'));
    xhr.onabort = () => reject(new ApiError(0, 'aborted', 'The upload was cancelled.'));
    xhr.send(formData);
  });
  return { promise, abort: () => xhr.abort() };
}

/** A comment on `post` (the post's JSON); resolves with the new comment. Signed here on a linked browser. */
export async function addComment(post, text) {
  if (signedWrites.current) return signedWrites.current.comment(post, text);
  return api(`/api/posts/${post.id}/comments`, { method: 'POST', json: { text } });
}

/**
 * A reaction `name` (null: taken back) to the post or comment `id` (`kind` 'post' or 'comment'; `post`: the post it
 * is on): `PUT`/`DELETE /api/{kind}s/{id}/reaction`, or signed here on a linked browser. Resolves with
 * `{ reactions, myReaction }` of the record reacted to.
 */
export async function sendReaction(kind, id, post, name) {
  if (signedWrites.current) return signedWrites.current.react(kind, id, post, name);
  const path = `/api/${kind}s/${encodeURIComponent(id)}/reaction`;
  return api(path, name === null ? { method: 'DELETE' } : { method: 'PUT', json: { reaction: name } });
}

/**
 * PUT /api/posts/{id}/photo: a new photo for one of this node's posts (`formData`: `photo`, optional `takenAt`,
 * `keepMetadata`); resolves with the post as it now is, rejects with an ApiError (415 `not_an_image`, 422
 * `corrupt_image` or `location_not_removable`, 403 `not_owner`, …).
 */
export function replacePhoto(id, formData) {
  return responseBody(fetch(`/api/posts/${encodeURIComponent(id)}/photo`, {
    method: 'PUT', body: formData, credentials: 'same-origin', headers: { Accept: 'application/json' },
  }));
}

/**
 * What the node reads in a photo before it is posted (`POST /api/photos/inspect`): `{mediaType, width, height,
 * location, takenAt}`, `location` null when the photo does not say where it was taken. Nothing is stored.
 */
export function inspectPhoto(file, signal) {
  const body = new FormData();
  body.append('photo', file, file.name);
  return responseBody(fetch('/api/photos/inspect', {
    method: 'POST', body, signal, credentials: 'same-origin', headers: { Accept: 'application/json' },
  }));
}

/**
 * Who this node is (from /api/status), filled in by app.js at start; `groups` and `logs` (this node's log key in
 * each of its groups: the author of what it writes there) from /api/groups, by loadGroups().
 */
export const session = { me: null, name: null, groups: null, logs: new Set(), maxPhotoBytes: null, account: null,
  guest: false };

/**
 * Whether `author` is this node: its own key (a post made in no group) or its log key in one of its groups; or, with
 * `account`, whether that is this node's person's account (`session.account`: a linked phone's, or read from a post
 * the node calls its own), so that what a phone of the same person wrote is yours too.
 */
export const isOwnAuthor = (author, account = null) => author != null
  && (author === session.me || session.logs.has(author) || (account != null && account === session.account));

let groupsLoading = null;

/**
 * Resolves once who this node is (`session.me`, `session.logs`) has been read, or could not be: what the browser
 * itself filters as yours (a search's "Mine") waits for it, since a reload asks for the search beside app.js's reads.
 */
export const whoWeAre = () => Promise.allSettled([nodeStatus(), loadGroups()]);

/**
 * GET /api/groups, kept in `session` (once; again with `fresh`, after a join or a new group). Resolves with the
 * groups; a failure is not kept, so the next call asks again.
 */
export function loadGroups(fresh = false) {
  // A guest sees its one group, set at the start of its session (browser.js); the node's list is not its to read.
  if (session.guest) return Promise.resolve(session.groups);
  if (groupsLoading && !fresh) return groupsLoading;
  const pending = api('/api/groups').then((body) => {
    if (groupsLoading === pending) {
      session.groups = body.groups;
      session.logs = new Set(body.groups.map((group) => group.log));
    }
    return body.groups;
  });
  groupsLoading = pending;
  pending.catch(() => { if (groupsLoading === pending) groupsLoading = null; });
  return pending;
}

/** A group's name for people: its name, else "(no name)" and the start of its id. */
export const groupLabel = (group) => group.name ?? `(no name) ${group.id.slice(0, 12)}`;

/**
 * /api/status in one shape. Docs/API.md: flat fields (`node` is the id, `name`, `posts`, …); the nested shape of
 * `status --json` (node.id, node.name, store.posts, …) is read too. Missing numbers are null.
 */
export function normalizeStatus(status) {
  const node = status.node;
  const store = status.store ?? status;
  const number = (value) => (typeof value === 'number' ? value : null);
  return {
    id: typeof node === 'string' ? node : node?.id ?? null,
    name: typeof node === 'string' ? status.name ?? null : node?.name ?? null,
    posts: number(store.posts),
    comments: number(store.comments),
    photos: number(store.photos),
    photoBytes: number(store.photoBytes),
    api: status.api ?? null,
    discovery: status.discovery ?? null,
    groups: number(status.groups),
    pendingRequests: number(status.pendingRequests),
    version: typeof status.version === 'string' ? status.version : null,
    // Photos over this size are not fetched by themselves (--max-photo-mb); null from a node that does not say.
    maxPhotoBytes: number(status.maxPhotoBytes),
    dataDirectory: [status.dataDirectory, status.data, status.dataDir].find((value) => typeof value === 'string') ?? null,
  };
}

let statusLoading = null;

/**
 * GET /api/status, normalized, kept in `session` (me, name, maxPhotoBytes); asked once, again with `fresh`. A
 * failure is not kept.
 */
export function nodeStatus(fresh = false) {
  // A guest is not told about the node (its id, data directory, peers): nothing of it is shown to a guest.
  if (session.guest) return Promise.resolve(normalizeStatus({}));
  if (statusLoading && !fresh) return statusLoading;
  const pending = api('/api/status').then((body) => {
    const status = normalizeStatus(body);
    session.me = status.id;
    session.name = status.name;
    session.maxPhotoBytes = status.maxPhotoBytes;
    return status;
  });
  statusLoading = pending;
  pending.catch(() => { if (statusLoading === pending) statusLoading = null; });
  return pending;
}
