// Filters and copy buttons. Without this script every finding is shown, and the snippets
// can be selected by hand.
(function () {
  "use strict";
  var form = document.getElementById("filters");
  var findings = Array.prototype.slice.call(document.querySelectorAll("article.finding"));
  function value(id) {
    var el = document.getElementById(id);
    return el ? el.value : "";
  }
  function apply() {
    var severities = {};
    form.querySelectorAll("input[name=severity]").forEach(function (box) {
      severities[box.value] = box.checked;
    });
    var category = value("f-category");
    var replica = value("f-replica");
    var text = value("f-text").trim().toLowerCase();
    var shown = 0;
    findings.forEach(function (f) {
      var hosts = [];
      try { hosts = JSON.parse(f.getAttribute("data-hosts") || "[]"); } catch (e) { hosts = []; }
      var ok = severities[f.getAttribute("data-severity")] !== false &&
        (!category || f.getAttribute("data-category") === category) &&
        (!replica || hosts.indexOf(replica) >= 0) &&
        (!text || f.textContent.toLowerCase().indexOf(text) >= 0);
      f.hidden = !ok;
      if (ok) { shown += 1; }
    });
    document.getElementById("f-count").textContent = shown + " of " + findings.length + " shown";
    document.getElementById("none-shown").hidden = shown > 0;
  }
  if (form) {
    form.hidden = false;
    form.addEventListener("input", apply);
    form.addEventListener("change", apply);
    form.addEventListener("submit", function (e) { e.preventDefault(); });
    apply();
  }
  function fallback(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    var done = false;
    try { done = document.execCommand("copy"); } catch (e) { done = false; }
    document.body.removeChild(area);
    return done;
  }
  // when the page may not write the clipboard, the snippet is selected for Ctrl+C
  function select(code) {
    if (!code || !window.getSelection) { return; }
    var range = document.createRange();
    range.selectNodeContents(code);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }
  function said(button, word) {
    button.textContent = word;
    setTimeout(function () { button.textContent = "Copy"; }, 1500);
  }
  function manual(button, code, text) {
    if (fallback(text)) {
      said(button, "Copied");
    } else {
      select(code);
      said(button, "Selected: press Ctrl+C");
    }
  }
  // a link to an element of the merged config unfolds the tree that holds it
  function reveal() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id ? document.getElementById(id) : null;
    if (!target) { return; }
    var folded = false;
    for (var node = target.parentElement; node; node = node.parentElement) {
      if (node.tagName === "DETAILS" && !node.open) { node.open = true; folded = true; }
    }
    if (folded) { target.scrollIntoView(); }
  }
  window.addEventListener("hashchange", reveal);
  reveal();
  document.querySelectorAll("button.copy").forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", function () {
      var code = button.parentNode.parentNode.querySelector("pre");
      var text = code ? code.textContent : "";
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(function () { said(button, "Copied"); }, function () {
          manual(button, code, text);
        });
      } else {
        manual(button, code, text);
      }
    });
  });
}());
