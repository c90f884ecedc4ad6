// Keel's dashboard script: sort a table by a column (a button in each header, so it works
// from the keyboard), and ask before a denial. The pages work without it.
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
  document.querySelectorAll("button[data-confirm]").forEach(function (button) {
    button.addEventListener("click", function (event) {
      if (!window.confirm(button.getAttribute("data-confirm"))) { event.preventDefault(); }
    });
  });
})();
