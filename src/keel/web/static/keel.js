// Keel's dashboard script: sort a table by a column (a button in each header, so it works
// from the keyboard), ask before a denial, and keep a running run's page current. The
// pages work without it.
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
  document.querySelectorAll("table.sortable").forEach(function (table) {
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
  // Delegated, so a button that arrives with a live update asks too.
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button[data-confirm]") : null;
    if (button && !window.confirm(button.getAttribute("data-confirm"))) { event.preventDefault(); }
  });
  // A run that can still change: fetch its page again every few seconds and swap the block
  // in place (no reload), until the run ends. Nothing is swapped while someone types their
  // id into a card's form.
  var live = document.getElementById("live");
  if (live && live.getAttribute("data-live") === "on" && window.fetch && window.DOMParser) {
    var every = parseInt(live.getAttribute("data-every") || "2000", 10);
    var timer = window.setInterval(function () {
      var active = document.activeElement;
      if (active && active.tagName === "INPUT" && live.contains(active) && active.value) { return; }
      window.fetch(window.location.href, { cache: "no-store", credentials: "same-origin" })
        .then(function (answer) { return answer.ok ? answer.text() : null; })
        .then(function (text) {
          if (!text) { return; }
          var fresh = new window.DOMParser().parseFromString(text, "text/html").getElementById("live");
          if (!fresh) { return; }
          if (fresh.innerHTML !== live.innerHTML) { live.innerHTML = fresh.innerHTML; }
          if (fresh.getAttribute("data-live") !== "on") {
            live.setAttribute("data-live", "off");
            window.clearInterval(timer);
          }
        })
        .catch(function () { /* the next tick tries again */ });
    }, every);
  }
})();
