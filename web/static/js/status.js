// status.js: the connection's state in the page's header, and why Send is
// off, in words.

import { $ } from './dom.js';

// MOVED_AFTER is how many failed reconnections (half a minute of the
// backoff) make the status say what to do if the relay moved.
const MOVED_AFTER = 6;

/** renderState shows the connection's state (Connection's onState). */
export function renderState(state, info) {
  $('retry').hidden = state !== 'reconnecting';
  const s = $('conn');
  const words = {
    connecting: 'connecting…',
    live: 'live',
    reconnecting: `reconnecting${info.inMs ? ` in ${Math.max(1, Math.round(info.inMs / 1000))} s` : ''}…`,
    refused: 'refused',
    closed: 'offline',
  };
  if (state === 'reconnecting' && info.failures >= MOVED_AFTER) {
    // The relay keeps its port across restarts; one that has not answered
    // for this long may have had to take another (the old one was taken).
    words.reconnecting = `no relay answers at ${location.host}: if pilotdesk restarted on another port, ` +
      'open its new link (Connect a device… in its window) on this device';
  }
  s.textContent = words[state] || state;
  s.dataset.state = state;
  document.body.dataset.retryIn = String(state === 'reconnecting' && info.inMs ? info.inMs : 0);
}

/** sendWhy says in words why Send is off ('' when it is on). */
export function sendWhy(c, live, viewer, state) {
  if (viewer) return 'This device is a viewer: it follows conversations but cannot send, answer or change the mode. A controller or the owner can.';
  if (!c) return 'No conversation is open.';
  if (live) return '';
  switch (state) {
    case 'refused': return 'The relay refused this page: Send comes back once it is connected again.';
    case 'closed': return 'Not connected to the relay.';
    default: return 'Not connected to the relay: reconnecting, Send comes back once it is connected.';
  }
}
