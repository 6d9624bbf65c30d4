// Reactions (Docs/API.md): the six a person can give to a post or a comment, a row of buttons to give one, change
// it or take it back (post.js), and the counts in short for a tile (timeline.js).

import { api, sendReaction } from './api.js';
import { h, showError, announce } from './dom.js';

/** The reactions a person can give, in the order they are shown (PROTOCOL.md §2.9). */
export const REACTIONS = [
  { name: 'heart', emoji: '❤️' },
  { name: 'thumbsup', emoji: '👍' },
  { name: 'laugh', emoji: '😂' },
  { name: 'wow', emoji: '😮' },
  { name: 'sad', emoji: '😢' },
  { name: 'thanks', emoji: '🙏' },
];

const emojiOf = (name) => REACTIONS.find((reaction) => reaction.name === name)?.emoji ?? name;

/** "❤️ 2 😂 1": the reactions given and their counts, in short; empty when there is none. */
export function reactionSummary(reactions) {
  return (reactions ?? []).filter((reaction) => reaction.count > 0)
    .map((reaction) => `${reaction.emoji} ${reaction.count}`).join(' ');
}

/** The same in words, for a screen reader: "2 heart, 1 laugh". */
export function reactionWords(reactions) {
  return (reactions ?? []).filter((reaction) => reaction.count > 0)
    .map((reaction) => `${reaction.count} ${reaction.name}`).join(', ');
}

/**
 * The row of the six reactions to a post or a comment (`kind` 'post' or 'comment', its `id`), each a button with
 * its emoji and, when some gave it, its count; this node's own reaction pressed (aria-pressed). Clicking one not
 * pressed sends it (api.js sendReaction; `post`: the post a comment is on), which replaces the earlier one; clicking
 * the pressed one takes it back. The row shows the node's answer, then `onChange({reactions, myReaction})` is called.
 * A refusal is shown in the alert region and the buttons stay as they were, usable. While a request is on its way
 * a click does nothing (the row is aria-busy). `small`: the row under a comment. Returns `{ element, show }`,
 * `show({reactions, myReaction})` to show counts read elsewhere (a live refresh).
 */
export function reactionBar(kind, id, initial, { small = false, label = 'Reactions', onChange = () => {}, post = id } = {}) {
  let mine = initial.myReaction ?? null;
  let busy = false;
  const buttons = new Map();
  for (const { name, emoji } of REACTIONS) {
    buttons.set(name, h('button', { type: 'button', class: 'reaction', dataset: { reaction: name }, onclick: () => choose(name) },
      h('span', { class: 'emoji', 'aria-hidden': 'true' }, emoji), h('span', { class: 'count', 'aria-hidden': 'true' })));
  }
  const element = h('div', { class: small ? 'reactions small' : 'reactions', role: 'group', 'aria-label': label },
    [...buttons.values()]);

  function show({ reactions, myReaction }) {
    mine = myReaction ?? null;
    const counts = new Map((reactions ?? []).map((reaction) => [reaction.name, reaction.count]));
    for (const [name, button] of buttons) {
      const count = counts.get(name) ?? 0;
      const pressed = name === mine;
      button.setAttribute('aria-pressed', String(pressed));
      button.querySelector('.count').textContent = count > 0 ? String(count) : '';
      const action = pressed ? `Take back your ${name}` : `React with ${name}`;
      button.setAttribute('aria-label', count > 0 ? `${action} (${count})` : action);
      button.title = count > 0 ? `${count} ${name}` : name;
    }
  }

  async function choose(name) {
    if (busy) return;
    const takeBack = name === mine;
    busy = true;
    element.setAttribute('aria-busy', 'true');
    try {
      const answer = await sendReaction(kind, id, post, takeBack ? null : name);
      show(answer);
      onChange({ reactions: answer.reactions, myReaction: answer.myReaction ?? null });
      announce(takeBack ? `Your ${name} is taken back.` : `You reacted ${emojiOf(name)}.`);
    } catch (error) {
      showError(error, takeBack ? 'Your reaction was not taken back' : 'Your reaction was not saved');
    } finally {
      busy = false;
      element.removeAttribute('aria-busy');
    }
  }

  show(initial);
  return { element, show };
}

/**
 * The reactions on a post's page (post.js): `post(post)` makes the post's row, `comment(comment, who)` a small one
 * for a comment (`forget(id)` when the comment leaves the page). `onPost({reactions, myReaction})` is called when
 * the post's own change (clicked here, or read again). `show(fresh)` shows the reactions of the post read again
 * and of its comments; `showPost(post)` the post's alone. `refreshSoon()`, on a `reaction` event: a moment later
 * it reads the post again (`GET /api/posts/{id}`), once for a burst of events; `stop()` when the page is left.
 */
export function postReactions(id, onPost) {
  let postRow = null;
  const commentRows = new Map(); // comment id -> its row
  let timer = 0;

  function show(fresh) {
    postRow?.show(fresh);
    onPost({ reactions: fresh.reactions, myReaction: fresh.myReaction ?? null });
    for (const comment of fresh.comments ?? []) commentRows.get(comment.id)?.show(comment);
  }

  return {
    post(post) {
      postRow = reactionBar('post', id, post, { label: 'Reactions to the post', onChange: onPost });
      return postRow.element;
    },
    comment(comment, who) {
      const row = reactionBar('comment', comment.id, comment,
        { small: true, label: `Reactions to the comment by ${who}`, post: id });
      commentRows.set(comment.id, row);
      return row.element;
    },
    forget: (commentId) => commentRows.delete(commentId),
    show,
    showPost: (post) => postRow?.show(post),
    refreshSoon() {
      window.clearTimeout(timer);
      timer = window.setTimeout(async () => {
        try {
          show(await api(`/api/posts/${encodeURIComponent(id)}`));
        } catch (error) {
          // Deleted meanwhile: the page says so on its own event.
          if (error.code !== 'unknown_post' && error.code !== 'deleted') showError(error, 'Could not show a new reaction');
        }
      }, 250);
    },
    stop: () => window.clearTimeout(timer),
  };
}
