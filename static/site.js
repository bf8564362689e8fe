// Hanging Context: small additions to pages that work fully without JavaScript.
(function () {
  "use strict";

  // Copy buttons for the "run these manifests" commands.
  document.querySelectorAll(".command pre").forEach(function (pre) {
    if (!navigator.clipboard) return;
    var button = document.createElement("button");
    button.type = "button";
    button.className = "copy";
    button.textContent = "Copy";
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(pre.innerText).then(function () {
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = "Copy"; }, 2000);
      });
    });
    pre.parentNode.appendChild(button);
  });

  // Citation markers: the source's title, publisher and date on hover and focus, read
  // from the sources list (the page says them once, there).
  document.querySelectorAll("a.cite").forEach(function (link) {
    var source = document.getElementById(link.getAttribute("href").slice(1));
    if (!source) return;
    var tip = document.createElement("span");
    tip.className = "cite-tip";
    tip.textContent = " " + source.textContent.replace(/\s+/g, " ").trim();
    link.appendChild(tip);
  });

  // Relative times beside the UTC ones ("3 hours ago").
  var units = [["year", 31536000], ["month", 2592000], ["week", 604800], ["day", 86400],
               ["hour", 3600], ["minute", 60]];
  var format = window.Intl && Intl.RelativeTimeFormat
    ? new Intl.RelativeTimeFormat(document.documentElement.lang || "en", { numeric: "auto" })
    : null;
  document.querySelectorAll("time[data-relative]").forEach(function (time) {
    var seconds = (Date.parse(time.getAttribute("datetime")) - Date.now()) / 1000;
    if (!format || isNaN(seconds)) return;
    for (var i = 0; i < units.length; i++) {
      if (Math.abs(seconds) >= units[i][1] || i === units.length - 1) {
        var note = document.createElement("span");
        note.className = "relative-time";
        note.textContent = " (" + format.format(Math.round(seconds / units[i][1]), units[i][0]) + ")";
        time.after(note);
        break;
      }
    }
  });
})();
