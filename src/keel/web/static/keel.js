// Keel's dashboard script: sort a table by a column (a button in each header, so it works
// from the keyboard), ask before a denial, decide a card in place, and keep a running
// run's page current. The pages work without it.
(function () {
  "use strict";
  function cellValue(row, index) {
    var cell = row.cells[index];
    var text = cell ? cell.textContent.trim() : "";
    var number = text.replace(/,/g, "").match(/^-?\d+(\.\d+)?/);
    return number ? parseFloat(number[0]) : text.toLowerCase();
  }
  function sortBy(table, index, th) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    rows.sort(function (a, b) {
      var x = cellValue(a, index), y = cellValue(b, index);
      if (x === y) { return 0; }
      var less = (typeof x === typeof y) ? x < y : String(x) < String(y);
      return (less ? -1 : 1) * (ascending ? 1 : -1);
    });
    Array.prototype.forEach.call(th.parentNode.children, function (other) { other.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    rows.forEach(function (row) { body.appendChild(row); });
  }
  function sortable(root) {
    root.querySelectorAll("table.sortable").forEach(function (table) {
      if (!table.tHead || !table.tBodies.length) { return; }
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
        var button = document.createElement("button");
        button.type = "button";
        button.className = "sort";
        button.textContent = th.textContent;
        button.title = "Sort by " + th.textContent;
        th.textContent = "";
        th.appendChild(button);
        button.addEventListener("click", function () { sortBy(table, index, th); });
      });
    });
  }
  sortable(document);
  // Delegated, so a button that arrives with a live update asks too.
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button[data-confirm]") : null;
    if (button && !window.confirm(button.getAttribute("data-confirm"))) { event.preventDefault(); }
  });
  // A run that can still change: fetch its page again every few seconds and swap the block
  // in place (no reload), until the run ends. Nothing is swapped while someone types their
  // id into a card's form. The block is looked up on each tick: a decision made in place
  // replaces it.
  var timer = null;
  function follow() {
    var live = document.getElementById("live");
    if (timer !== null || !live || live.getAttribute("data-live") !== "on" || !window.fetch || !window.DOMParser) { return; }
    var every = parseInt(live.getAttribute("data-every") || "2000", 10);
    timer = window.setInterval(function () {
      var here = document.getElementById("live");
      var active = document.activeElement;
      if (!here) { window.clearInterval(timer); timer = null; return; }
      if (active && active.tagName === "INPUT" && here.contains(active) && active.value) { return; }
      window.fetch(window.location.href, { cache: "no-store", credentials: "same-origin" })
        .then(function (answer) { return answer.ok ? answer.text() : null; })
        .then(function (text) {
          if (!text) { return; }
          var fresh = new window.DOMParser().parseFromString(text, "text/html").getElementById("live");
          var now = document.getElementById("live");
          if (!fresh || !now) { return; }
          if (fresh.innerHTML !== now.innerHTML) { now.innerHTML = fresh.innerHTML; }
          if (fresh.getAttribute("data-live") !== "on") {
            now.setAttribute("data-live", "off");
            window.clearInterval(timer);
            timer = null;
          }
        })
        .catch(function () { /* the next tick tries again */ });
    }, every);
  }
  follow();
  // An approve / deny form posts in the background and the page it lands on replaces this
  // one's content in place, its address with it: the card shows as decided, with word of
  // what was decided, and the page never reloads. Should the post fail on the way, the
  // form is sent the plain way.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches || !form.matches("form.decide") || form.getAttribute("data-plain") || !window.fetch || !window.DOMParser) { return; }
    event.preventDefault();
    var submitter = event.submitter || null;
    var body = new window.URLSearchParams(new window.FormData(form, submitter));
    var buttons = form.querySelectorAll("button");
    buttons.forEach(function (b) { b.disabled = true; });
    window.fetch(form.action, { method: "POST", body: body, credentials: "same-origin" })
      .then(function (answer) {
        return answer.text().then(function (text) { return { answer: answer, text: text }; });
      })
      .then(function (got) {
        var fresh = new window.DOMParser().parseFromString(got.text, "text/html");
        var main = document.getElementById("main"), into = fresh.getElementById("main");
        if (!main || !into) { throw new Error("no page came back"); }
        main.innerHTML = into.innerHTML;
        document.title = fresh.title;
        if (got.answer.redirected && window.history.replaceState) { window.history.replaceState(null, "", got.answer.url); }
        sortable(main);
        follow();
        var told = document.getElementById("notice") || main.querySelector("h1");
        if (told) { told.setAttribute("tabindex", "-1"); told.focus(); }
      })
      .catch(function () {
        buttons.forEach(function (b) { b.disabled = false; });
        form.setAttribute("data-plain", "1");
        if (form.requestSubmit) { form.requestSubmit(submitter); } else { form.submit(); }
      });
  });
})();
