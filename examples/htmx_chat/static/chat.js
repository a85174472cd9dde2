// htmx does not swap 4xx/5xx answers by default: show their fragment in #error-box instead.
document.addEventListener("htmx:responseError", function (evt) {
  var box = document.getElementById("error-box");
  box.innerHTML = evt.detail.xhr.responseText || '<p class="error">Something went wrong.</p>';
});
document.addEventListener("htmx:sendError", function () {
  document.getElementById("error-box").innerHTML = '<p class="error">Network error, please try again.</p>';
});
document.addEventListener("htmx:afterRequest", function (evt) {
  if (evt.detail.successful) {
    document.getElementById("error-box").innerHTML = "";
    var log = document.getElementById("log");
    log.scrollTop = log.scrollHeight;
  }
});
