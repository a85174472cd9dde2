// Progressive enhancement for the chat page: send the form with fetch() and
// append the server-rendered turn instead of reloading. Without this script
// the form is a plain POST that redirects back to the conversation.
(function () {
  "use strict";

  var form = document.getElementById("compose");
  var log = document.getElementById("transcript");
  var flash = document.getElementById("flash");
  if (!form || !log || !window.fetch) return;

  var textarea = form.elements.q;
  var button = form.querySelector("button[type=submit]");

  function showError(html) {
    flash.innerHTML = html;
  }

  function scrollToEnd() {
    var last = log.lastElementChild;
    if (last) last.scrollIntoView({ block: "end" });
  }

  textarea.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      form.requestSubmit ? form.requestSubmit() : form.submit();
    }
  });

  form.addEventListener("submit", function (e) {
    e.preventDefault();
    if (!textarea.value.trim()) return;

    var body = new URLSearchParams(new FormData(form));
    button.disabled = true;
    textarea.readOnly = true;
    flash.innerHTML = "";

    fetch(form.action, {
      method: "POST",
      headers: {
        "Content-Type": "application/x-www-form-urlencoded;charset=UTF-8",
        "X-Requested-With": "fetch"
      },
      body: body.toString(),
      credentials: "same-origin"
    })
      .then(function (res) {
        return res.text().then(function (html) {
          if (!res.ok) {
            showError(html || '<p class="flash-error" role="alert">Request failed (' + res.status + ").</p>");
            return;
          }
          var empty = document.getElementById("empty-note");
          if (empty) empty.remove();
          log.insertAdjacentHTML("beforeend", html);
          textarea.value = "";
          scrollToEnd();
        });
      })
      .catch(function () {
        showError('<p class="flash-error" role="alert">Network error — your message was not sent.</p>');
      })
      .finally(function () {
        button.disabled = false;
        textarea.readOnly = false;
        textarea.focus();
      });
  });

  scrollToEnd();
})();
