// evalh view's keyboard navigation: the only script the pages run (served by the viewer itself).
// On a run's matrix: j/k next/previous cell, n/p next/previous case (row), f next failure,
// o shows or hides the focused cell's answer, Enter opens it (the cell's own link).
// On a review queue: y/n answer the cell (it passes / it fails), s skips it, j/k go to the
// next/previous cell of the queue; one answer per page (a second key press is ignored).
// Elsewhere: n/p/f/u follow the page's rel="next" / rel="prev" / next-failure / rel="up" links.
// It reads the page and moves focus; it never builds markup from page text.
(function () {
  "use strict";
  var FAILED = ["fail", "error", "partial"];

  function cells() {
    return Array.prototype.slice.call(document.querySelectorAll("table.matrix td.cell a.cell-link"));
  }

  function focusCell(links, index) {
    if (index < 0 || index >= links.length) { return false; }
    links[index].focus();
    links[index].scrollIntoView({block: "nearest"});
    return true;
  }

  function follow(selector) {
    var link = document.querySelector(selector);
    if (link) { window.location.assign(link.href); }
  }

  // The cell link in the same column of the next (step 1) or previous (step -1) row that has one.
  function verticalNeighbour(link, step) {
    var cell = link.parentElement;
    var row = cell.parentElement;
    for (row = step > 0 ? row.nextElementSibling : row.previousElementSibling; row;
         row = step > 0 ? row.nextElementSibling : row.previousElementSibling) {
      var other = row.cells[cell.cellIndex];
      var found = other ? other.querySelector("a.cell-link") : null;
      if (found) { return found; }
    }
    return null;
  }

  function onMatrix(key, links) {
    // The focused cell: its link, or anything inside it (an answer's summary just clicked).
    var active = document.activeElement;
    var holder = active && active.closest ? active.closest("td.cell") : null;
    var current = holder ? links.indexOf(holder.querySelector("a.cell-link")) : -1;
    if (current < 0 && key !== "f") { return focusCell(links, 0); }
    if (key === "j") { return focusCell(links, current + 1) || follow('a[rel="next"]'); }
    if (key === "k") { return focusCell(links, current - 1) || follow('a[rel="prev"]'); }
    if (key === "n" || key === "p") {
      var other = verticalNeighbour(links[current], key === "n" ? 1 : -1);
      if (other) { return focusCell(links, links.indexOf(other)); }
      return follow(key === "n" ? 'a[rel="next"]' : 'a[rel="prev"]');
    }
    if (key === "f") {
      for (var i = current + 1; i < links.length; i++) {
        var status = links[i].parentElement.classList;
        if (FAILED.some(function (name) { return status.contains(name); })) { return focusCell(links, i); }
      }
      return false;
    }
    if (key === "o") {
      var answer = links[current].parentElement.querySelector("details.answer");
      if (answer) { answer.open = !answer.open; }
    }
    return true;
  }

  var answered = false;

  function onReview(key, form) {
    var buttons = {y: "button.answer-pass", n: "button.answer-fail"};
    if (buttons[key]) {
      var button = form.querySelector(buttons[key]);
      if (button && !answered) {
        answered = true;
        button.click();
      }
      return true;
    }
    var links = {s: "a.skip", j: 'a[rel="next"]', k: 'a[rel="prev"]'};
    if (links[key]) {
      follow(links[key]);
      return true;
    }
    return false;
  }

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || event.defaultPrevented) { return; }
    var target = event.target;
    if (target && (target.isContentEditable || ["INPUT", "SELECT", "TEXTAREA"].indexOf(target.tagName) >= 0)) {
      return;
    }
    var key = event.key;
    var review = document.querySelector("form.review");
    if (review && onReview(key, review)) {
      event.preventDefault();
      return;
    }
    var links = cells();
    if (links.length && ["j", "k", "n", "p", "f", "o"].indexOf(key) >= 0) {
      onMatrix(key, links);
      event.preventDefault();
      return;
    }
    var targets = {n: 'a[rel="next"]', p: 'a[rel="prev"]', f: "a.next-failure", u: 'a[rel="up"]'};
    if (targets[key]) {
      follow(targets[key]);
      event.preventDefault();
    }
  });
})();
