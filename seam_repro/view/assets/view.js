// seam-repro run explorer. Plain DOM, no framework (docs/view.md).
// Every text that comes from a run (model output, prompts, gold, ids, names) is written with
// textContent / createTextNode, never parsed as HTML: model output and dataset text are untrusted.
// Data files are scripts (data/<name>.js calling SEAMVIEW.put): a file:// page may not fetch().
"use strict";
(function () {
  const store = Object.create(null);
  const waiting = Object.create(null);
  window.SEAMVIEW = { put: function (name, obj) { store[name] = obj; } };

  function load(name) {
    if (store[name]) return Promise.resolve(store[name]);
    if (!waiting[name]) {
      waiting[name] = new Promise(function (resolve, reject) {
        const s = document.createElement("script");
        s.src = "data/" + name + ".js";
        s.charset = "utf-8";
        s.onload = function () {
          if (store[name]) resolve(store[name]);
          else reject(new Error("data/" + name + ".js did not define its data"));
        };
        s.onerror = function () {
          delete waiting[name];
          reject(new Error("cannot load data/" + name + ".js (is the site folder complete?)"));
        };
        document.head.appendChild(s);
      });
    }
    return waiting[name];
  }

  // el("td", {class: "x", onclick: fn}, "text", child) -- strings become text nodes.
  function el(tag, attrs) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) {
      const v = attrs[k];
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v;
      else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (let j = 2; j < arguments.length; j++) add(e, arguments[j]);
    return e;
  }
  function add(parent, kid) {
    if (kid === null || kid === undefined || kid === false) return;
    if (Array.isArray(kid)) { kid.forEach(function (k) { add(parent, k); }); return; }
    parent.appendChild(typeof kid === "object" ? kid : document.createTextNode(vis(String(kid))));
  }
  // Bidirectional controls (U+202A-E, U+2066-9, marks) in run text would reorder what a reader sees:
  // every text written to the page shows them as visible tags ("[U+202E]") instead.
  const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  function vis(s) {
    return s.replace(BIDI, function (c) { return "[U+" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0") + "]"; });
  }
  // Keys are run data (instance ids): only own properties count, so an id like "constructor" or
  // "__proto__" is looked up as data, never as something every object inherits.
  function own(obj, key) { return obj && Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined; }
  // Maps keyed by run data (model names, dataset names): a Map has no prototype to write onto.
  function getOr(map, key, make) { if (!map.has(key)) map.set(key, make()); return map.get(key); }
  function fmt(x, nd) { return x === null || x === undefined ? "–" : Number(x).toFixed(nd === undefined ? 1 : nd); }
  function href(params) {
    return "#" + Object.keys(params).map(function (k) {
      return encodeURIComponent(k) + "=" + encodeURIComponent(params[k]);
    }).join("&");
  }
  function route() { return new URLSearchParams(location.hash.slice(1)); }
  function main() { return document.getElementById("main"); }
  function show(nodes) { const m = main(); m.replaceChildren(); add(m, nodes); }
  function fail(err) { show(el("p", { class: "error", id: "error" }, "Error: " + (err && err.message || err))); }

  let index = null;
  function model(m) { return index.models[m]; }
  function text(x) { return typeof x === "string" ? x : JSON.stringify(x, null, 1); }

  function nav(active) {
    const n = document.getElementById("nav");
    n.replaceChildren();
    add(n, el("a", { href: "#page=summary", class: active === "summary" ? "active" : null }, "Summary"));
    index.datasets.forEach(function (d, k) {
      add(n, el("a", { href: href({ page: "ds", d: k }), class: active === "ds" + k ? "active" : null }, d.display_name || d.name));
    });
    if (index.datasets.length) {
      add(n, el("a", { href: href({ page: "pair", d: 0 }), class: active === "pair" ? "active" : null }, "Compare models"));
      add(n, el("a", { href: href({ page: "runs", d: 0 }), class: active === "runs" ? "active" : null }, "Across runs"));
    }
  }

  // ---- summary: Table 3 shape, per-run scores, figures --------------------------------------------
  function summaryPage() {
    nav("summary");
    const rep = index.report;
    const names = Object.keys(rep.datasets);
    const byModel = new Map();  // label -> Map(dataset -> row); labels are user text ("__proto__" too)
    names.forEach(function (ds) {
      own(rep.datasets, ds).rows.forEach(function (row) { getOr(byModel, row.model, function () { return new Map(); }).set(ds, row); });
    });
    const paperOf = new Map(), unscored = new Map(), entryOf = new Map();
    index.models.forEach(function (m) {
      if (m.paper) paperOf.set(m.label, m.paper);
      unscored.set(m.label, m.unscored || {});
      entryOf.set(m.label, m);
    });
    const head = el("tr", {}, el("th", { class: "name" }, "Model"), names.map(function (ds) {
      const d = own(rep.datasets, ds);
      return el("th", { title: d.metric || "" }, d.display_name || ds);
    }), el("th", {}, "AR"), el("th", {}, "ARSD"));
    let anyApart = false;
    // a run under another protocol has its AR/ARSD apart from the comparable models': shown in parentheses
    function stat(key, label) {
      const mine = own(own(rep.stability, key), label);
      const apart = own(rep.stability.apart, label);
      return el("td", {}, mine !== undefined ? fmt(mine, 2) : apart ? "(" + fmt(own(apart, key), 2) + ") ‡" : "–");
    }
    const body = (rep.model_order || []).map(function (label) {
      const rows = byModel.get(label) || new Map();
      const isRef = names.some(function (ds) { return rows.get(ds) && rows.get(ds).from_summary_stats; });
      const entry = entryOf.get(label);
      const partial = entry && entry.partial;
      return el("tr", { class: isRef ? "ref" : null, "data-model": label },
        el("td", { class: "name" }, label + (isRef ? " (reference)" : ""),
          partial ? el("span", { class: "partial", title: "a partial run (--limit, --datasets or --runs): means are over the instances replayed" },
            "partial: " + partial) : null),
        names.map(function (ds) {
          const r = rows.get(ds);
          const paperRows = paperOf.has(label) ? byModel.get(paperOf.get(label)) : null;
          const paper = paperRows && paperRows.get(ds);
          const why = !r && own(unscored.get(label), ds);
          if (r && (r.rank === null || r.rank === undefined)) anyApart = true;
          return el("td", { "data-dataset": ds, title: why ? "not scored: " + why : null },
            r ? el("span", { class: "mean-std" }, fmt(r.mean) + " ± " + fmt(r.std)) : why ? "not scored" : "–",
            r ? (r.rank !== null && r.rank !== undefined ? " (" + r.rank + ")"
              : el("span", { class: "apart", title: "not ranked: protocol differs (" + (r.protocol_mismatch || []).join("; ") +
                "); rank " + (r.rank_if_comparable || "–") + " if comparable" }, " ‡")) : null,
            paper ? el("span", { class: "paper" }, "paper: " + fmt(paper.mean) + " ± " + fmt(paper.std)) : null);
        }),
        stat("average_rank", label), stat("arsd", label));
    });
    const out = [el("h1", {}, "Summary"),
      el("p", { class: "note" }, "Mean ± population std over runs, 0-100 scale; (rank) by ASO as in the paper's Table 3." +
        (rep.reference ? " Reference: " + rep.reference + "." : "")),
      el("div", { class: "table-wrap" }, el("table", { id: "table3" }, el("thead", {}, head), el("tbody", {}, body)))];
    if (anyApart) {
      out.push(el("p", { class: "note", id: "apart-legend" }, "‡ not ranked: the run's protocol differs from the " +
        "reference's (a partial run, other generation settings); hover a cell for how, and the rank it would have " +
        "if it were comparable."));
    }
    // per-run scores of every model (as summary.json has them); a dataset it did not score shows "–"
    const runRows = [];
    let maxRuns = 0;
    index.models.forEach(function (m) {
      Object.keys(m.runs || {}).forEach(function (ds) { maxRuns = Math.max(maxRuns, Object.keys(own(m.runs, ds)).length); });
    });
    index.models.forEach(function (m) {
      Object.keys(m.runs || {}).forEach(function (ds) {
        const runs = own(m.runs, ds);
        const keys = Object.keys(runs).sort(function (a, b) { return a - b; });
        const cells = keys.map(function (k) { return el("td", { "data-run": k }, fmt(own(runs, k), 2)); });
        while (cells.length < maxRuns) cells.push(el("td", {}, ""));
        runRows.push(el("tr", { "data-model": m.label, "data-dataset": ds }, el("td", { class: "name" }, m.label),
          el("td", { class: "name" }, ds), cells));
      });
      Object.keys(m.unscored || {}).forEach(function (ds) {
        if (own(m.runs || {}, ds) !== undefined) return;
        const cells = [];
        for (let k = 0; k < Math.max(maxRuns, 1); k++) cells.push(el("td", { "data-run": String(k) }, "–"));
        runRows.push(el("tr", { "data-model": m.label, "data-dataset": ds, class: "unscored",
          title: "not scored: " + own(m.unscored, ds) }, el("td", { class: "name" }, m.label),
          el("td", { class: "name" }, ds + " (not scored)"), cells));
      });
    });
    if (runRows.length) {
      const h = [el("th", { class: "name" }, "Model"), el("th", { class: "name" }, "Dataset")];
      for (let k = 0; k < maxRuns; k++) h.push(el("th", {}, "run " + k));
      out.push(el("h2", {}, "Score per run"), el("table", { id: "per-run" }, el("thead", {}, el("tr", {}, h)),
        el("tbody", {}, runRows)));
    }
    if (index.datasets.length) {
      out.push(el("h2", {}, "Instances"), el("ul", {}, index.datasets.map(function (d, k) {
        return el("li", {}, el("a", { href: href({ page: "ds", d: k }) }, d.display_name || d.name), " — " + d.instances + " instances, " +
          d.models.length + " model(s), " + d.runs.length + " run(s)");
      })));
    }
    index.figures.forEach(function (f) {
      out.push(el("figure", {}, el("img", { src: f.file, alt: f.title, loading: "lazy" }), el("figcaption", {}, f.title)));
    });
    if ((rep.notes || []).length) out.push(el("h2", {}, "Notes"), el("ul", { class: "note" }, rep.notes.map(function (n) {
      return el("li", {}, n);
    })));
    show(out);
  }

  // ---- per dataset: instances x (model, run) --------------------------------------------------------
  const filters = {};
  function datasetPage(d) {
    nav("ds" + d);
    const info = index.datasets[d];
    if (!info) return fail("no dataset " + d);
    return load(info.grid).then(function (grid) {
      const f = filters[d] = filters[d] || { model: "", run: "", min: "", max: "", valid: "", q: "", sort: "id" };
      const count = el("p", { class: "count", id: "row-count" });
      const wrap = el("div", { class: "grid-wrap" });
      function select(id, label, key, options) {
        const s = el("select", { id: id }, options.map(function (o) { return el("option", { value: o[0] }, o[1]); }));
        s.value = f[key];
        s.addEventListener("change", function () { f[key] = s.value; redraw(); });
        return el("label", {}, label, s);
      }
      function input(id, label, key, type) {
        const i = el("input", { id: id, type: type, step: "any" });
        i.value = f[key];
        let timer = null;
        i.addEventListener("input", function () {
          clearTimeout(timer);
          timer = setTimeout(function () { f[key] = i.value; redraw(); }, 150);
        });
        return el("label", {}, label, i);
      }
      const controls = el("div", { class: "controls" },
        select("f-model", "Model", "model", [["", "all"]].concat(info.models.map(function (m) { return [String(m), model(m).label]; }))),
        select("f-run", "Run", "run", [["", "all"]].concat(info.runs.map(function (r) { return [String(r), "run " + r]; }))),
        input("f-min", "Score ≥", "min", "number"), input("f-max", "Score ≤", "max", "number"),
        select("f-valid", "Output format", "valid", [["", "any"], ["valid", "valid"], ["invalid", "invalid"]]),
        input("f-q", "Search predictions", "q", "search"),
        select("f-sort", "Sort rows", "sort", [["id", "instance order"], ["desc", "mean score, high first"],
          ["asc", "mean score, low first"]]));
      let seq = 0;
      function redraw() {
        const mine = ++seq;
        const cols = [];
        grid.cols.forEach(function (c, k) {
          if ((f.model === "" || String(c.model) === f.model) && (f.run === "" || String(c.run) === f.run)) cols.push(k);
        });
        const q = f.q.trim().toLowerCase();
        const preds = q ? Promise.all(Array.from(new Set(cols.map(function (k) { return grid.cols[k].pred; }))).map(load))
          : Promise.resolve(null);
        if (q) count.textContent = "Searching…";
        preds.then(function () {
          if (mine !== seq) return;
          drawGrid(d, grid, f, cols, q, wrap, count);
        }).catch(fail);
      }
      const perRunOnly = grid.cols.length > 0 && grid.cols.every(function (c) {
        return c.s.every(function (x) { return x === null || x === undefined; });
      });
      show([el("h1", {}, (info.display_name || info.name) + ": instances"), el("p", { class: "note", id: "grid-legend" },
        "Rows: instances; columns: model × run; a cell is the instance score as published (red: output format invalid). " +
        "· = not sampled in that run (no prediction); a dimmed cell fails the filters but shares its row with one that " +
        "passes. Click a cell for the prediction, prompt, factors and gold."),
        perRunOnly ? el("p", { class: "note", id: "per-run-only" },
          "No per-instance score here (–): this dataset's metric is computed per run, over all of a run's instances " +
          "together (see \"Score per run\" on the summary); a cell still opens the prediction and any per-instance " +
          "score it has.") : null, controls, count, wrap]);
      redraw();
    });
  }

  function passes(grid, c, i, f, q) {
    const col = grid.cols[c];
    const v = col.v[i];
    if (v === null || v === undefined) return false;  // no prediction
    const s = col.s[i];
    if (f.valid === "valid" && v !== true) return false;
    if (f.valid === "invalid" && v !== false) return false;
    if (f.min !== "" && !(s !== null && s >= Number(f.min))) return false;
    if (f.max !== "" && !(s !== null && s <= Number(f.max))) return false;
    if (q) {
      const cell = own(own(store[col.pred], String(col.run)), grid.instances[i]);
      if (!cell || String(cell.o).toLowerCase().indexOf(q) < 0) return false;
    }
    return true;
  }

  function drawGrid(d, grid, f, cols, q, wrap, count) {
    let rows = [];
    grid.instances.forEach(function (iid, i) {
      const ok = cols.map(function (c) { return passes(grid, c, i, f, q); });
      if (ok.some(Boolean)) {
        const vals = cols.map(function (c) { return grid.cols[c].s[i]; }).filter(function (x) { return x !== null; });
        rows.push({ i: i, ok: ok, mean: vals.length ? vals.reduce(function (a, b) { return a + b; }, 0) / vals.length : null });
      }
    });
    if (f.sort !== "id") {
      const sign = f.sort === "desc" ? -1 : 1;
      rows.sort(function (a, b) {
        if (a.mean === null) return b.mean === null ? a.i - b.i : 1;
        if (b.mean === null) return -1;
        return sign * (a.mean - b.mean) || a.i - b.i;
      });
    }
    count.textContent = rows.length + " of " + grid.instances.length + " instances";
    const head = el("tr", {}, el("th", { class: "name" }, "Instance"), cols.map(function (c) {
      const col = grid.cols[c];
      return el("th", { title: model(col.model).label + ", run " + col.run }, short(col.model) + " · r" + col.run);
    }));
    const body = el("tbody");
    rows.forEach(function (r) {
      const iid = grid.instances[r.i];
      const tr = el("tr", { "data-instance": iid }, el("td", { class: "name" }, el("a", {
        href: href({ page: "runs", d: d, i: r.i, m: grid.cols[cols[0]].model }), title: "this instance across all runs" }, iid)));
      cols.forEach(function (c, k) {
        const col = grid.cols[c];
        const v = col.v[r.i];
        const cls = v === null || v === undefined ? "missing" : "cell" + (v === false ? " invalid" : "") + (r.ok[k] ? "" : " dim");
        const td = el("td", { class: cls, "data-col": c, "data-model": model(col.model).label, "data-run": col.run },
          v === null || v === undefined ? "·" : fmt(col.s[r.i]));
        if (!(v === null || v === undefined)) {
          const open = function () { location.hash = href({ page: "cell", d: d, c: c, i: r.i }); };
          td.tabIndex = 0;  // reachable with Tab, opened with Enter, like a link
          td.addEventListener("click", open);
          td.addEventListener("keydown", function (ev) { if (ev.key === "Enter") open(); });
        }
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    wrap.replaceChildren(el("table", { id: "grid" }, el("thead", {}, head), body));
  }
  // A column header: the label without its org prefix, unless another model shares that short name
  // (a/X and b/X), then the whole label; long ones are cut with "…" (the title has the whole).
  function short(m) {
    const label = String(model(m).label), tail = label.split("/").pop();
    const clash = index.models.some(function (o, k) { return k !== Number(m) && String(o.label).split("/").pop() === tail; });
    const s = clash ? label : tail;
    return s.length > 22 ? (clash ? "…" + s.slice(s.length - 21) : s.slice(0, 21) + "…") : s;
  }

  // ---- one prediction: factors, prompt, output, parse, gold, scores -------------------------------
  function cellData(grid, c, i) {
    const col = grid.cols[c];
    return Promise.all([load(col.pred), load(col.prompt)]).then(function (got) {
      const iid = grid.instances[i];
      return { col: col, iid: iid, cell: own(own(got[0], String(col.run)), iid) || null, run: got[1],
        inst: own(got[1].instances, iid) || {} };
    });
  }
  function facts(pairs) {
    return el("dl", { class: "facts" }, pairs.filter(function (p) { return p; }).map(function (p) {
      return [el("dt", {}, p[0]), el("dd", p[2] ? { id: p[2] } : {}, p[1])];
    }));
  }
  function scoreFacts(cell) {
    const alt = Object.keys(cell.alt || {}).map(function (k) {
      return [k, fmt(cell.alt[k].score, 2) + " (" + (cell.alt[k].metric || "") + ")"];
    });
    return facts([["score (as published)", fmt(cell.s, 2), "score"], ["metric version", cell.mv || "–"]].concat(alt, [
      ["output format", el("span", { class: cell.v ? "flag-ok" : "flag-bad", id: "validity" }, cell.v ? "valid" : "invalid")],
      cell.t ? ["prompt", "truncated to fit the context"] : null]));
  }
  function factorFacts(run, inst) {
    const f = run.factors;
    return facts([["paraphrase", "#" + f.paraphrase_index], ["paraphrase text", f.paraphrase_text],
      ["document order", JSON.stringify(f.doc_order)], ["few-shot ids", JSON.stringify(f.demo_indices)],
      ["max documents", String(f.max_num_docs)], ["generation seed", String(inst.gen_seed)],
      ["split", String(f.split)], ["profile", String(f.profile)]]);
  }
  function promptBox(raw) {
    const prompt = vis(raw);  // searched and shown as the reader sees it: bidi controls made visible
    const pre = el("pre", { class: "prompt" });
    const hits = el("span", { class: "note" });
    const search = el("input", { type: "search", placeholder: "search the prompt", class: "prompt-search" });
    function paint() {
      const q = search.value;
      pre.replaceChildren();
      if (!q) { pre.textContent = prompt; hits.textContent = ""; return; }
      const low = prompt.toLowerCase(), ql = q.toLowerCase();
      let at = 0, n = 0, k;
      while ((k = low.indexOf(ql, at)) >= 0) {
        pre.appendChild(document.createTextNode(prompt.slice(at, k)));
        pre.appendChild(el("mark", {}, prompt.slice(k, k + q.length)));
        at = k + q.length; n++;
      }
      pre.appendChild(document.createTextNode(prompt.slice(at)));
      hits.textContent = " " + n + " match" + (n === 1 ? "" : "es");
    }
    search.addEventListener("input", paint);
    paint();
    return el("details", { class: "prompt-box" }, el("summary", {}, "Prompt (" + raw.length + " characters)"),
      el("div", {}, search, hits), pre);
  }
  function outputBlocks(cell, ids) {
    return [el("h2", {}, "Raw prediction"), el("pre", { id: ids ? "prediction" : null, class: "prediction" }, cell.o),
      el("h2", {}, "Parsed response"), el("pre", { id: ids ? "parsed" : null, class: "parsed" }, cell.p === null ? "–" : cell.p)];
  }

  function cellPage(d, c, i) {
    nav("ds" + d);
    const info = index.datasets[d];
    return load(info.grid).then(function (grid) {
      if (!grid.cols[c] || grid.instances[i] === undefined) throw new Error("no such cell");
      return cellData(grid, c, i).then(function (x) {
        if (!x.cell) throw new Error("no prediction for this cell");
        const col = x.col;
        const others = info.models.filter(function (m) { return m !== col.model; });
        show([el("h1", { id: "cell-title" }, info.name + " · " + model(col.model).label + " · run " + col.run +
            " · instance " + x.iid),
          el("p", {}, el("a", { href: href({ page: "ds", d: d }) }, "← all instances"), " · ",
            el("a", { href: href({ page: "runs", d: d, i: i, m: col.model }) }, "this instance across all runs"),
            others.length ? [" · ", el("a", { href: href({ page: "pair", d: d, r: col.run, i: i, a: col.model, b: others[0] }) },
              "compare with another model on this prompt")] : null),
          el("div", { class: "side" },
            el("section", {}, el("h2", {}, "Score"), scoreFacts(x.cell)),
            el("section", {}, el("h2", {}, "Sampled factors of run " + col.run), factorFacts(x.run, x.inst))),
          outputBlocks(x.cell, true), el("h2", {}, "Gold"), el("pre", { id: "gold" }, text(x.inst.gold)),
          promptBox(x.inst.prompt || "")]);
      });
    });
  }

  // ---- compare: two models on one prompt; one instance across runs ----------------------------------
  function pickers(info, grid, p, fields) {
    const box = el("div", { class: "controls" });
    function pick(key, label, options) {
      const s = el("select", { id: "p-" + key }, options.map(function (o) { return el("option", { value: o[0] }, o[1]); }));
      s.value = p[key];
      s.addEventListener("change", function () {
        const q = Object.assign({}, p); q[key] = s.value;
        location.hash = href(q);
      });
      box.appendChild(el("label", {}, label, s));
    }
    pick("d", "Dataset", index.datasets.map(function (x, k) { return [String(k), x.name]; }));
    pick("i", "Instance", grid.instances.map(function (iid, k) { return [String(k), iid]; }));
    fields.forEach(function (f) {
      if (f === "r") pick("r", "Run", info.runs.map(function (r) { return [String(r), "run " + r]; }));
      else pick(f, f === "m" ? "Model" : "Model " + f.toUpperCase(), info.models.map(function (m) { return [String(m), model(m).label]; }));
    });
    return box;
  }
  function colOf(grid, m, r) {
    for (let k = 0; k < grid.cols.length; k++) if (grid.cols[k].model === Number(m) && grid.cols[k].run === Number(r)) return k;
    return -1;
  }
  function side(grid, c, i, title, withFactors) {
    if (c < 0) return Promise.resolve(el("section", {}, el("h2", {}, title), el("p", { class: "note" }, "this run was not replayed for this model")));
    return cellData(grid, c, i).then(function (x) {
      if (!x.cell) return el("section", {}, el("h2", {}, title), el("p", { class: "note" }, "not sampled in this run"));
      return el("section", { class: "compare-side", "data-model": model(x.col.model).label, "data-run": x.col.run },
        el("h2", {}, title), scoreFacts(x.cell), withFactors ? factorFacts(x.run, x.inst) : null, outputBlocks(x.cell, false),
        promptBox(x.inst.prompt || ""));
    });
  }
  function pairPage(p) {
    nav("pair");
    const d = Number(p.d || 0), info = index.datasets[d];
    if (!info) return fail("no dataset " + d);
    return load(info.grid).then(function (grid) {
      const q = { page: "pair", d: d, r: p.r !== undefined ? p.r : info.runs[0], i: p.i !== undefined ? p.i : 0,
        a: p.a !== undefined ? p.a : info.models[0], b: p.b !== undefined ? p.b : info.models[Math.min(1, info.models.length - 1)] };
      const i = Number(q.i);
      return Promise.all([side(grid, colOf(grid, q.a, q.r), i, model(q.a).label, false),
        side(grid, colOf(grid, q.b, q.r), i, model(q.b).label, false)]).then(function (sides) {
        const c = colOf(grid, q.a, q.r) >= 0 ? colOf(grid, q.a, q.r) : colOf(grid, q.b, q.r);
        const extra = c >= 0 ? cellData(grid, c, i) : Promise.resolve(null);
        return extra.then(function (x) {
          show([el("h1", {}, "Two models on one prompt"), pickers(info, grid, q, ["r", "a", "b"]),
            x ? el("div", { class: "side" }, el("section", {}, el("h2", {}, "Sampled factors of run " + q.r), factorFacts(x.run, x.inst)),
              el("section", {}, el("h2", {}, "Gold"), el("pre", {}, text(x.inst.gold)))) : null,
            el("div", { class: "side", id: "pair" }, sides)]);
        });
      });
    });
  }
  function runsPage(p) {
    nav("runs");
    const d = Number(p.d || 0), info = index.datasets[d];
    if (!info) return fail("no dataset " + d);
    return load(info.grid).then(function (grid) {
      const q = { page: "runs", d: d, i: p.i !== undefined ? p.i : 0, m: p.m !== undefined ? p.m : info.models[0] };
      const i = Number(q.i);
      return Promise.all(info.runs.map(function (r) {
        return side(grid, colOf(grid, q.m, r), i, "run " + r, true);
      })).then(function (sides) {
        show([el("h1", {}, "One instance across all runs: " + grid.instances[i] + " · " + model(q.m).label),
          pickers(info, grid, q, ["m"]), el("div", { class: "side", id: "runs" }, sides)]);
      });
    });
  }

  function render() {
    const p = route();
    const page = p.get("page") || "summary";
    const obj = {};
    p.forEach(function (v, k) { obj[k] = v; });
    let done;
    if (page === "ds") done = datasetPage(Number(p.get("d")));
    else if (page === "cell") done = cellPage(Number(p.get("d")), Number(p.get("c")), Number(p.get("i")));
    else if (page === "pair") done = pairPage(obj);
    else if (page === "runs") done = runsPage(obj);
    else done = summaryPage();
    Promise.resolve(done).catch(fail);
  }

  window.addEventListener("hashchange", render);
  load("index").then(function (ix) {
    index = ix;
    document.title = ix.title;
    render();
  }).catch(fail);
})();
