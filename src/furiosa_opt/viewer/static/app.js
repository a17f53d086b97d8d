// Page glue: loading (from /data, the file picker or a drop), the toolbar, the details sidebar and
// the test hooks. Strings from a file reach the page only through textContent.
"use strict";

(function () {
  const FV = window.FV;
  const $ = (id) => document.getElementById(id);
  let view = null;
  let shown; // the item in the sidebar
  const state = (window.viewerState = { mode: "empty", file: "", error: "" });

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  function showError(message) {
    state.error = message;
    $("error").textContent = message;
    $("error").hidden = !message;
  }

  // ---- sidebar --------------------------------------------------------------------------------
  function details(title, rows, groups, notes = []) {
    const side = $("details");
    side.replaceChildren(el("h2", title));
    const dl = el("dl");
    for (const [key, value] of rows) {
      if (value === undefined || value === null || value === "") continue;
      dl.append(el("dt", key), el("dd", value));
    }
    side.append(dl);
    for (const [heading, lines] of notes) { // plain text lists (a DMA's memory findings)
      if (!lines.length) continue;
      side.append(el("h3", heading));
      const ul = el("ul", undefined, "findings");
      for (const line of lines) ul.append(el("li", line));
      side.append(ul);
    }
    for (const [heading, items] of groups) {
      if (!items.length) continue;
      side.append(el("h3", heading));
      const ul = el("ul");
      for (const [label, pick] of items) {
        const button = el("button", label, "link");
        button.addEventListener("click", pick);
        const li = el("li");
        li.append(button);
        ul.append(li);
      }
      side.append(ul);
    }
  }

  // A DMA's memory report as sidebar rows: its cycles and bottleneck, then what each side's streams show.
  // The loaders check only that a report is an object, so a hand-edited one may lack a field or hold
  // another type there: such a value shows as "?" rather than as "undefined" or "NaN%".
  function memoryRows(memory) {
    if (!memory) return [];
    const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : "?");
    const share = (v) => (num(v) === "?" ? "?" : `${Math.round(100 * v)}%`);
    const side = (s, verb) => {
      if (s === null || typeof s !== "object") return "";
      if (s.memory === "hbm") {
        const stack = s.stack_toggles === true ? "both stacks" : s.stack_toggles === false ? "one stack" : "stacks ?";
        return `HBM ${num(s.channels)}/32 channels, ${stack}, row conflicts ${share(s.row_conflict_share)}, ` +
          `partial ${verb} ${num(s.partial)}`; // partial: requests covering part of a 256-byte unit
      }
      return s.memory === "dm" ? `DM ${num(s.dmns)} DMN(s), balance ${share(s.dmn_balance)}` : "";
    };
    const bottleneck = typeof memory.bottleneck === "string" ? memory.bottleneck : "?";
    return [["memory", `${num(memory.cycles)} cycles, bound by ${bottleneck}`], ["read", side(memory.read, "reads")],
      ["write", side(memory.write, "writes")]];
  }

  const lifetime = (it) => `${it.begin} – ${it.end} (${it.end - it.begin} cycles)`;
  const tensorLabel = (t) => `${t.name}${t.visaName ? ` ${t.visaName}` : ""} (${t.buffer})`;

  function showItem(item) {
    if (!item) {
      $("details").replaceChildren(el("p", "Click an instruction or a tensor to see its details.", "hint"));
      return;
    }
    const pick = (it) => () => view.select(it);
    if (item.kind === "instruction") {
      details(item.name, [
        ["index", item.id], ["type", item.tpe], ["lifetime", lifetime(item)], ["contexts", item.contexts.join(", ")],
        ["lanes", item.lanes.join(", ")], ["utilization", item.util], ["description", item.description],
        ["source", item.source], ["critical path", item.critical ? "yes" : "no"], ...memoryRows(item.memory),
      ], [
        ["Input tensors", item.inputs.map((t) => [tensorLabel(t), pick(t)])],
        ["Output tensors", item.outputs.map((t) => [tensorLabel(t), pick(t)])],
      ], [["Memory findings", item.findings.map((f) => `${f.rule}: ${f.shown}. Fix: ${f.fix}`)]]);
    } else {
      details(item.name, [
        ["vISA tensor", item.visaName], ["dtype", item.dtype], ["shape (mapping)", item.mapping], ["buffer", item.buffer],
        ["address", item.address], ["size (bytes)", item.size], ["lifetime", lifetime(item)],
        ["blocks", item.blockBegin === undefined ? "" : `${item.blockBegin} – ${item.blockEnd}`],
      ], [["Operators", item.users.map((o) => [`${o.name} ${o.tpe}`, pick(o)])]]);
    }
  }

  function showNode(node) {
    if (!node) {
      $("details").replaceChildren(el("p", "Click a node to see its details.", "hint"));
      return;
    }
    const text = (k) => (typeof node.fields[k] === "string" ? node.fields[k] : FV.show(node.fields, k, 400));
    const rows = Object.keys(node.fields).map((k) => [k, text(k)]);
    const pick = (n) => () => view.select(n);
    details(node.label, rows, [
      ["Inputs", node.inEdges.map((e) => [`${e.from.label} (${e.kind})`, pick(e.from)])],
      ["Outputs", node.outEdges.map((e) => [`${e.to.label} (${e.kind})`, pick(e.to)])],
    ]);
  }

  // ---- publishing the render state ------------------------------------------------------------
  function scheduleChanged(v) {
    $("range-start").value = Math.round(v.t0);
    $("range-end").value = Math.round(v.t1);
    const sel = v.selection;
    Object.assign(state, {
      range: [v.t0, v.t1], addressRanges: { ...v.addr }, brush: v.brushMode,
      highlighted: v.highlighted,
      selection: sel ? { kind: sel.kind, name: sel.name } : null, lastFrameMs: v.lastFrameMs,
    });
    if (sel !== shown) {
      shown = sel;
      showItem(sel);
    }
  }

  function graphChanged(v) {
    const sel = v.selection;
    Object.assign(state, {
      visibleNodes: v.visible, matches: v.matches.map((n) => n.id), selection: sel ? { kind: "node", name: sel.id } : null,
      zoom: v.zoom, lastFrameMs: v.lastFrameMs,
    });
    if (sel !== shown) {
      shown = sel;
      showNode(sel);
    }
  }

  // Computed when read (a 100,000-name list per frame would cost more than the drawing).
  for (const [key, kind] of [["visibleInstructions", "instruction"], ["visibleTensors", "tensor"]]) {
    Object.defineProperty(state, key, { enumerable: true, get: () => (view && view.visibleNames ? view.visibleNames(kind) : undefined) });
  }

  // ---- loading --------------------------------------------------------------------------------
  function load(text, name) {
    let graph, model;
    try {
      ({ graph, model } = FV.read(text));
    } catch (e) {
      showError(`${name}: ${e.message}`); // the view on screen, if any, stays as it was
      return false;
    }
    showError("");
    if (view) view.destroy();
    const mode = graph ? "graph" : "schedule";
    for (const e of document.querySelectorAll("[data-mode]")) e.hidden = e.dataset.mode !== mode;
    $("drop").hidden = true;
    $("brush").textContent = "Enable Brush";
    $("brush").classList.remove("on");
    Object.assign(state, { mode, file: name, kernel: model.kernel });
    const title = graph ? "IR Graph Viewer" : "Schedule Viewer";
    $("title").textContent = title;
    document.title = `furiosa-opt ${title}: ${model.kernel || name}`;
    shown = undefined;
    const canvas = $("canvas");
    if (graph) {
      $("summary").textContent = `${model.kernel || name}: ${model.nodes.length} nodes, ${model.edges.length} edges`;
      view = new FV.GraphView(canvas, model, graphChanged);
      state.criticalPath = undefined;
      state.marked = undefined;
    } else {
      const summary = `${model.kernel || name}: ${model.instructions.length} instructions, ${model.tensors.length} tensors`;
      $("summary").textContent = `${summary}, makespan ${model.makespan} cycles`;
      const marked = model.instructions.filter((o) => o.findings.length).map((o) => o.name);
      if (marked.length) $("summary").textContent += `, ${marked.length} DMA(s) with memory findings (amber band, warning triangle)`;
      state.makespan = model.makespan;
      state.marked = marked;
      state.criticalPath = model.criticalPath.map((o) => o.name);
      view = new FV.ScheduleView(canvas, model, scheduleChanged);
    }
    view.changed();
    return true;
  }

  function readFile(file) {
    file.text().then((text) => load(text, file.name), (e) => showError(`${file.name}: ${e.message}`));
  }

  // ---- toolbar --------------------------------------------------------------------------------
  $("file").addEventListener("change", (e) => e.target.files[0] && readFile(e.target.files[0]));
  $("drop").addEventListener("click", () => $("file").click());
  document.addEventListener("dragover", (e) => e.preventDefault());
  document.addEventListener("drop", (e) => {
    e.preventDefault();
    if (e.dataTransfer.files[0]) readFile(e.dataTransfer.files[0]);
  });
  const applyRange = () => view && view.setRange && view.setRange(Number($("range-start").value), Number($("range-end").value));
  $("range-start").addEventListener("change", applyRange);
  $("range-end").addEventListener("change", applyRange);
  $("brush").addEventListener("click", () => {
    view.brushMode = !view.brushMode;
    $("brush").textContent = view.brushMode ? "Disable Brush" : "Enable Brush";
    $("brush").classList.toggle("on", view.brushMode);
    state.brush = view.brushMode;
  });
  $("reset").addEventListener("click", () => view && (view.reset ? view.reset() : view.fit()));
  $("fit").addEventListener("click", () => view && view.fit());
  $("search").addEventListener("input", (e) => view && view.search && view.search(e.target.value));
  window.addEventListener("resize", () => view && view.changed());

  window.viewerApi = {
    load,
    setRange: (t0, t1) => view.setRange(t0, t1),
    locate: (name) => view.locate(name),
    box: (name) => view.box(name),
    paneRect: (buffer) => view.paneRect(buffer),
    graphLayers: () => view.g.nodes.map((n) => [n.id, n.layer]),
    // Where the nodes are drawn (page pixels) and what colour a page pixel has: what the tests of the fit
    // and of the arrowheads measure.
    graphBox: () => {
      const r = view.canvas.getBoundingClientRect(), box = { left: Infinity, right: -Infinity, top: Infinity, bottom: -Infinity };
      for (const n of view.g.nodes) {
        const [x, y] = view.toScreen(n);
        box.left = Math.min(box.left, r.left + x);
        box.top = Math.min(box.top, r.top + y);
        box.right = Math.max(box.right, r.left + x + FV.NODE_W * view.zoom);
        box.bottom = Math.max(box.bottom, r.top + y + FV.NODE_H * view.zoom);
      }
      return box;
    },
    pixel: (x, y) => {
      const r = view.canvas.getBoundingClientRect(), dpr = window.devicePixelRatio || 1;
      return Array.from(view.canvas.getContext("2d").getImageData(Math.round((x - r.left) * dpr), Math.round((y - r.top) * dpr), 1, 1).data);
    },
    render: () => {
      view.render();
      return view.lastFrameMs;
    },
  };

  fetch("/data").then((r) => (r.ok ? r.text().then((text) => load(text, "/data")) : null), () => null)
    .finally(() => (state.ready = true));
})();
