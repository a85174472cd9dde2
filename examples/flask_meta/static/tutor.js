// Tutor chat front end: loads the history, posts questions, shows answers.
(function () {
  "use strict";

  const csrfToken = document.querySelector('meta[name="csrf-token"]').content;
  const log = document.getElementById("log");
  const form = document.getElementById("ask-form");
  const input = document.getElementById("question");
  const button = form.querySelector("button");
  const errorBox = document.getElementById("error");

  function addMessage(from, text, extraClass) {
    const li = document.createElement("li");
    li.className = from + (extraClass ? " " + extraClass : "");
    li.textContent = text;
    log.appendChild(li);
    li.scrollIntoView({ block: "end" });
    return li;
  }

  function showError(message) {
    errorBox.textContent = message;
    errorBox.hidden = false;
  }

  function clearError() {
    errorBox.hidden = true;
    errorBox.textContent = "";
  }

  // Pull the error message out of a JSON body if there is one.
  async function errorMessage(resp) {
    try {
      const body = await resp.json();
      if (body && body.error) return body.error;
    } catch (_) { /* not JSON */ }
    return "Something went wrong (" + resp.status + ").";
  }

  async function loadHistory() {
    try {
      const resp = await fetch("/api/history", { credentials: "same-origin" });
      if (!resp.ok) {
        showError(await errorMessage(resp));
        return;
      }
      const messages = await resp.json();
      log.replaceChildren();
      messages.forEach((m) => addMessage(m.from, m.text));
    } catch (err) {
      showError("Could not load your conversation.");
    }
  }

  async function ask(question) {
    clearError();
    addMessage("student", question);
    const pending = addMessage("tutor", "Thinking…", "pending");
    button.disabled = true;
    try {
      const resp = await fetch("/api/ask", {
        method: "POST",
        credentials: "same-origin",
        headers: {
          "Content-Type": "application/json",
          "X-CSRFToken": csrfToken,
        },
        body: JSON.stringify({ question: question }),
      });
      if (!resp.ok) {
        pending.remove();
        showError(await errorMessage(resp));
        return;
      }
      const data = await resp.json();
      pending.textContent = data.answer;
      pending.classList.remove("pending");
    } catch (err) {
      pending.remove();
      showError("Network error, please try again.");
    } finally {
      button.disabled = false;
      input.focus();
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const question = input.value.trim();
    if (!question) return;
    input.value = "";
    ask(question);
  });

  loadHistory();
})();
