// Quill chat page: loads the conversation, sends messages, shows replies.
(function () {
  'use strict';

  const csrfToken = document.querySelector('meta[name="csrf-token"]').getAttribute('content');
  const list = document.getElementById('messages');
  const emptyState = document.getElementById('empty-state');
  const notice = document.getElementById('notice');
  const form = document.getElementById('composer');
  const input = document.getElementById('message-body');
  const sendButton = document.getElementById('send-button');

  const timeFormat = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });

  function showError(text) {
    notice.textContent = text;
    notice.hidden = false;
  }

  function clearError() {
    notice.hidden = true;
    notice.textContent = '';
  }

  function appendTurn(turn, opts) {
    const li = document.createElement('li');
    li.className = 'message message--' + (turn.speaker === 'member' ? 'member' : 'quill');
    if (opts && opts.pending) li.classList.add('message--pending');
    if (turn.id) li.dataset.turnId = turn.id;

    const who = document.createElement('span');
    who.className = 'message-author';
    who.textContent = turn.speaker === 'member' ? 'You' : 'Quill';

    const body = document.createElement('p');
    body.className = 'message-body';
    body.textContent = turn.body;

    const time = document.createElement('time');
    time.className = 'message-time';
    if (turn.sentAt) {
      time.dateTime = turn.sentAt;
      time.textContent = timeFormat.format(new Date(turn.sentAt));
    }

    li.append(who, body, time);
    list.appendChild(li);
    emptyState.hidden = true;
    li.scrollIntoView({ block: 'end' });
    return li;
  }

  async function errorMessage(res) {
    try {
      const data = await res.json();
      if (data && data.error && data.error.message) return data.error.message;
    } catch (_) { /* not JSON */ }
    return 'Request failed (' + res.status + ').';
  }

  async function loadConversation() {
    try {
      const res = await fetch('/api/conversation', {
        headers: { Accept: 'application/json' },
        credentials: 'same-origin',
      });
      if (!res.ok) {
        showError(await errorMessage(res));
        return;
      }
      const data = await res.json();
      const turns = (data.conversation && data.conversation.turns) || [];
      list.replaceChildren();
      turns.forEach((t) => appendTurn(t));
      emptyState.hidden = turns.length > 0;
    } catch (err) {
      showError('Could not reach Quill. Check your connection and reload.');
    }
  }

  async function send(text) {
    clearError();
    const pending = appendTurn({ speaker: 'member', body: text, sentAt: new Date().toISOString() }, { pending: true });
    sendButton.disabled = true;
    input.value = '';
    try {
      const res = await fetch('/api/conversation/messages', {
        method: 'POST',
        credentials: 'same-origin',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json',
          'x-csrf-token': csrfToken,
        },
        body: JSON.stringify({ body: text }),
      });
      if (!res.ok) {
        pending.classList.add('message--failed');
        showError(await errorMessage(res));
        input.value = text; // let them retry without retyping
        return;
      }
      const data = await res.json();
      pending.classList.remove('message--pending');
      if (data.message && data.message.id) pending.dataset.turnId = data.message.id;
      appendTurn(data.reply);
    } catch (err) {
      pending.classList.add('message--failed');
      showError('Could not reach Quill. Your message was not sent.');
      input.value = text;
    } finally {
      sendButton.disabled = false;
      input.focus();
    }
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text || sendButton.disabled) return;
    send(text);
  });

  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });

  loadConversation();
})();
