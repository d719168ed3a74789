// prefix-audit site: sorting and filtering of tables, in the page (no network, works from file://).
//
// Filters: a <form class="filters" data-for="TABLE"> holds <select data-filter="NAME"> elements; each keeps
// the rows of table #TABLE whose data-NAME equals its value (a select marked data-tokens: whose data-NAME
// holds its value among space-separated tokens). A table marked data-units="tbody" (the health page: one
// <tbody> per task) is filtered by tbody, its attributes on the tbody. The filters' state lives in the page's
// address (#category=schema&origin=agent), so a link can open a table already filtered and a filtered
// view can be bookmarked; an address fragment without "=" is a plain anchor and left alone.
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
      if (th.hasAttribute("aria-sort")) th.setAttribute("aria-sort", "none");
    });
    header.classList.add(ascending ? "sorted-asc" : "sorted-desc");
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header, index) {
      var kind = header.getAttribute("data-sort");
      if (!kind) return;
      // Keyboard users sort too: the header takes the focus and sorts on Enter or Space; it stays a column
      // header (aria-sort says how the table is sorted, which a button may not carry).
      header.setAttribute("tabindex", "0");
      header.setAttribute("aria-sort", "none");
      var sort = function () { sortTable(table, index, kind === "num", header); };
      header.addEventListener("click", sort);
      header.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sort(); }
      });
    });
  });

  function hashState() {
    var hash = window.location.hash.slice(1);
    var state = {};
    if (hash.indexOf("=") < 0) return state;
    hash.split("&").forEach(function (pair) {
      var at = pair.indexOf("=");
      if (at > 0) state[decodeURIComponent(pair.slice(0, at))] = decodeURIComponent(pair.slice(at + 1));
    });
    return state;
  }

  function filterUnits(table) {
    return table.getAttribute("data-units") === "tbody" ? Array.prototype.slice.call(table.tBodies)
                                    : Array.prototype.slice.call(table.tBodies[0].rows);
  }

  document.querySelectorAll("form.filters[data-for]").forEach(function (form) {
    var table = document.getElementById(form.getAttribute("data-for"));
    if (!table) return;
    var selects = Array.prototype.slice.call(form.querySelectorAll("select[data-filter]"));
    var shown = form.querySelector("[data-shown]");

    function apply() {
      var count = 0;
      filterUnits(table).forEach(function (unit) {
        var keep = selects.every(function (select) {
          if (!select.value) return true;
          var value = unit.getAttribute("data-" + select.getAttribute("data-filter")) || "";
          return select.hasAttribute("data-tokens") ? value.split(" ").indexOf(select.value) >= 0
                                                    : value === select.value;
        });
        unit.hidden = !keep;
        if (keep) count += 1;
      });
      if (shown) shown.textContent = String(count);
    }

    function remember() {
      var pairs = selects.filter(function (s) { return s.value; }).map(function (s) {
        return encodeURIComponent(s.getAttribute("data-filter")) + "=" + encodeURIComponent(s.value);
      });
      var address = window.location.pathname + window.location.search + (pairs.length ? "#" + pairs.join("&") : "");
      try { window.history.replaceState(null, "", address); } catch (e) { /* some file:// pages refuse; filters still work */ }
    }

    // An address with filters sets every select (those it does not name to "any"); a plain anchor none.
    function restore() {
      var state = hashState();
      if (Object.keys(state).length) {
        selects.forEach(function (select) {
          var wanted = state[select.getAttribute("data-filter")];
          var known = Array.prototype.some.call(select.options, function (o) { return o.value === wanted; });
          select.value = wanted !== undefined && known ? wanted : "";
        });
      }
      apply();
    }

    selects.forEach(function (select) {
      select.addEventListener("change", function () { apply(); remember(); });
    });
    window.addEventListener("hashchange", restore);
    restore();
  });
})();
