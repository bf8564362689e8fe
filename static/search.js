// The search page: Pagefind's own search code over the bundles of the index, merged at
// query time (bundles.json lists them, and the stale entries of the sealed ones: stories
// edited, moved or withdrawn since, which the fresh bundle or nothing now holds).
(function () {
  "use strict";

  var form = document.getElementById("search");
  var input = document.getElementById("search-input");
  var status = document.getElementById("search-status");
  var list = document.getElementById("search-results");
  var more = document.getElementById("search-more");
  if (!form || !input || !window.fetch || !window.URL) return;

  var PAGE = 10;  // results shown at a time
  var manifest = new URL(form.dataset.bundles, location.href);
  var loading = null;  // the index, once asked for
  var current = null;  // the search on screen
  var timer = 0;
  var asked = 0;

  function paths(names) {
    return names.map(function (name) { return new URL(name, manifest).pathname; });
  }

  // One search over the bundles; a bundle that fails to load (deleted by a deploy since
  // the manifest was read) is left out rather than failing every search.
  async function open(bundles) {
    var pagefind = await import(bundles[0] + "pagefind.js");
    var engine = pagefind.createInstance({ basePath: bundles[0], excerptLength: 24 });
    var failed = [];
    await Promise.all(bundles.slice(1).map(function (path) {
      return engine.mergeIndex(path).catch(function () { failed.push(path); });
    }));
    if (!failed.length) return engine;
    await engine.destroy();
    return open(bundles.filter(function (path) { return failed.indexOf(path) < 0; }));
  }

  function load() {
    if (!loading) {
      loading = fetch(manifest, { cache: "no-cache" }).then(function (response) {
        if (!response.ok) throw new Error(response.status);
        return response.json();
      }).then(async function (data) {
        if (!data.bundles.length) return null;
        return { engine: await open(paths(data.bundles)), stale: new Set(data.stale) };
      });
      loading.catch(function () { loading = null; });  // try again on the next search
    }
    return loading;
  }

  // Pagefind's excerpt is the page's text with < and > escaped and the matches in <mark>:
  // made into nodes here, never parsed as HTML.
  function excerpt(text) {
    var p = document.createElement("p");
    p.className = "search-excerpt";
    var marked = false;
    text.split(/(<mark>|<\/mark>)/).forEach(function (part) {
      if (part === "<mark>" || part === "</mark>") { marked = part === "<mark>"; return; }
      var node = document.createTextNode(part.replace(/&lt;/g, "<").replace(/&gt;/g, ">"));
      if (marked) {
        var mark = document.createElement("mark");
        mark.appendChild(node);
        node = mark;
      }
      p.appendChild(node);
    });
    return p;
  }

  function item(data) {
    var li = document.createElement("li");
    li.className = "search-result";
    var title = document.createElement("h2");
    var link = document.createElement("a");
    link.href = data.url;
    link.textContent = (data.meta && data.meta.title) || data.url;
    title.appendChild(link);
    li.appendChild(title);
    li.appendChild(excerpt(data.excerpt || ""));
    return li;
  }

  // The count is exact once every result is shown; before, results not yet looked at
  // may be stale entries.
  function say(search) {
    var count = search.results.length - search.dropped;
    var done = search.next >= search.results.length;
    var about = done || !search.stale.size ? "" : "About ";
    status.textContent = count === 0 ? "No stories found for “" + search.term + "”."
      : about + (count === 1 ? "1 story" : count + " stories") + " found for “" + search.term + "”.";
    more.hidden = done;
  }

  // The next PAGE results in score order, without stale entries and repeated URLs.
  async function showMore(search) {
    var added = 0;
    while (added < PAGE && search.next < search.results.length) {
      var batch = search.results.slice(search.next, search.next + PAGE - added);
      search.next += batch.length;
      var found = await Promise.all(batch.map(function (r) { return r.data(); }));
      if (search !== current) return;
      found.forEach(function (data) {
        var entry = data.meta && data.meta.entry;
        if (search.stale.has(entry) || search.urls.has(data.url) || data.url.charAt(0) !== "/") {
          search.dropped += 1;
          return;
        }
        search.urls.add(data.url);
        list.appendChild(item(data));
        added += 1;
      });
    }
    say(search);
  }

  async function run() {
    var term = input.value.trim();
    var mine = ++asked;
    history.replaceState(null, "", term ? "?q=" + encodeURIComponent(term) : location.pathname);
    if (!term) {
      current = null;
      list.replaceChildren();
      status.textContent = "";
      more.hidden = true;
      return;
    }
    try {
      var index = await load();
      if (!index) { status.textContent = "The search index is empty."; return; }
      var found = await index.engine.search(term);
      if (mine !== asked) return;
      current = { term: term, results: found.results, next: 0, dropped: 0,
                  urls: new Set(), stale: index.stale };
      list.replaceChildren();
      await showMore(current);
    } catch (error) {
      if (mine === asked) status.textContent = "Search is not available right now.";
    }
  }

  input.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(run, 250);
  });
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    clearTimeout(timer);
    run();
  });
  more.addEventListener("click", function () { if (current) showMore(current); });

  var query = new URLSearchParams(location.search).get("q");
  if (query) {
    input.value = query;
    run();
  }
})();
