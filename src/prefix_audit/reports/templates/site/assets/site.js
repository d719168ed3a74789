// prefix-audit site: sorting and filtering of tables, in the page (no network, works from file://).
(function () {
  "use strict";

  function cellValue(row, index, numeric) {
    var cell = row.cells[index];
    var raw = cell.hasAttribute("data-value") ? cell.getAttribute("data-value") : cell.textContent.trim();
    if (!numeric) return raw;
    var value = parseFloat(raw);
    return isNaN(value) ? -Infinity : value;
  }

  function sortTable(table, index, numeric, header) {
    var body = table.tBodies[0];
    var ascending = !header.classList.contains("sorted-asc");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, index, numeric), y = cellValue(b, index, numeric);
      // Text in natural order: the numbers inside names by value (multi_turn_base_9 before multi_turn_base_10).
      var order = numeric ? (x < y ? -1 : x > y ? 1 : 0) : x.localeCompare(y, "en", {numeric: true});
      return ascending ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(header.parentNode.cells, function (th) {
      th.classList.remove("sorted-asc", "sorted-desc");
    });
    header.classList.add(ascending ? "sorted-asc" : "sorted-desc");
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header, index) {
      var kind = header.getAttribute("data-sort");
      if (!kind) return;
      header.addEventListener("click", function () { sortTable(table, index, kind === "num", header); });
    });
  });

  var rollouts = document.getElementById("rollouts");
  var selects = document.querySelectorAll("select[data-filter]");
  function applyFilters() {
    var shown = 0;
    Array.prototype.forEach.call(rollouts.tBodies[0].rows, function (row) {
      var keep = true;
      selects.forEach(function (select) {
        if (!select.value) return;
        var value = row.getAttribute("data-" + select.getAttribute("data-filter")) || "";
        // A select marked data-tokens matches one of the row's space-separated values (log issue codes).
        var match = select.hasAttribute("data-tokens") ? value.split(" ").indexOf(select.value) >= 0 : value === select.value;
        if (!match) keep = false;
      });
      row.hidden = !keep;
      if (keep) shown += 1;
    });
    document.getElementById("shown").textContent = String(shown);
  }
  if (rollouts) {
    selects.forEach(function (select) { select.addEventListener("change", applyFilters); });
    applyFilters();
  }
})();
