// The one EventSource on /api/events (Docs/API.md; event types as `watch --json`, Docs/CLI.md).
// EventSource reconnects by itself after a dropped connection; when the server answers with an error it gives up
// (readyState CLOSED), so we open a new one, waiting longer each time (1 s up to 30 s).

const listeners = new Map(); // type -> Set<fn(data)>
const TYPES = ['watching', 'post', 'comment', 'postEdited', 'deleted', 'reaction', 'notification', 'photoArrived',
  'thumbnailArrived', 'photoSkipped', 'peerJoined', 'peerLeft', 'fork', 'syncFinished', 'joinRequested'];

let source = null;
let retryDelay = 1000;
let everOpened = false;
let wasDown = false;

export function on(type, fn) {
  if (!listeners.has(type)) listeners.set(type, new Set());
  listeners.get(type).add(fn);
  return () => listeners.get(type).delete(fn);
}

function emit(type, data) {
  for (const fn of listeners.get(type) ?? []) {
    try {
      fn(data);
    } catch (error) {
      console.error('event handler', type, error);
    }
  }
}

function setStatus(state) {
  const element = document.getElementById('live-status');
  if (!element) return;
  element.dataset.state = state;
  element.textContent = { open: 'live', connecting: 'connecting…', down: 'reconnecting…' }[state];
  element.title = state === 'open' ? 'Live updates are on' : 'Live updates are off; reconnecting';
}

export function connect() {
  if (source) source.close();
  setStatus(everOpened ? 'down' : 'connecting');
  source = new EventSource('/api/events', { withCredentials: true });
  source.onopen = () => {
    retryDelay = 1000;
    setStatus('open');
    // After a gap, what was missed is fetched again by the views ("reconnected").
    if (wasDown) emit('reconnected', {});
    everOpened = true;
    wasDown = false;
  };
  source.onerror = () => {
    wasDown = true;
    setStatus('down');
    if (source.readyState === EventSource.CLOSED) {
      const delay = retryDelay;
      retryDelay = Math.min(retryDelay * 2, 30000);
      window.setTimeout(connect, delay);
    }
  };
  for (const type of TYPES) {
    source.addEventListener(type, (message) => {
      let data;
      try {
        data = JSON.parse(message.data);
      } catch {
        return;
      }
      emit(type, data);
    });
  }
}

/**
 * A second stream, with ?progress=true, while a photo is fetched: its `photoProgress` and `photoArrived` events go
 * to `handlers` (type -> fn(data)). The main stream stays as it is (no gap, no reconnection). Resolves once the
 * stream is open (or after 5 s: the fetch goes ahead, the main stream still says when the photo arrives) with a
 * function that closes it.
 */
export function progressStream(handlers) {
  const stream = new EventSource('/api/events?progress=true', { withCredentials: true });
  for (const [type, fn] of Object.entries(handlers)) {
    stream.addEventListener(type, (message) => {
      try {
        fn(JSON.parse(message.data));
      } catch (error) {
        console.error('progress handler', type, error);
      }
    });
  }
  const close = () => stream.close();
  return new Promise((resolve) => {
    stream.addEventListener('open', () => resolve(close), { once: true });
    window.setTimeout(() => resolve(close), 5000);
  });
}
