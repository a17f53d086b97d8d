// Reading the two input formats into plain objects the views draw. No DOM here.
// Every string from a file stays data: the views render it with textContent or fillText only.
"use strict";

(function () {
  const FV = (window.FV = window.FV || {});

  FV.LANES = ["Main", "Sub", "VE", "TDMA", "PDMA", "Core"];
  FV.BUFFERS = ["Sram", "Trf", "Vrf", "Spm", "Dram"];
  // Register files and SRAM are addressed per slice; the JSON's size is summed over the 512 slices.
  FV.SLICES = 512;
  // Strings from a file are looked up only in Maps (a plain object would answer "__proto__" or "constructor").
  const CONTEXT_LANE = new Map(Object.entries({
    MainContext: "Main", Main: "Main", SubContext: "Sub", Sub: "Sub", VectorEngine: "VE", VE: "VE",
    DmaEngine: "TDMA", TDMA: "TDMA", PcieDma: "PDMA", PDMA: "PDMA", Core: "Core", CoreContext: "Core",
  }));

  function fail(message) {
    throw new Error(message);
  }

  // The lanes an instruction occupies: its contexts, plus Core for a Core instruction. Noop and views: none.
  FV.lanesOf = function (contexts, tpe) {
    const lanes = [];
    for (const c of contexts) {
      const lane = CONTEXT_LANE.get(c);
      if (lane && !lanes.includes(lane)) lanes.push(lane);
    }
    if (tpe === "Core" && !lanes.includes("Core")) lanes.push("Core");
    return lanes;
  };

  // ---- JSON as Python's json module reads it ------------------------------------------------------
  // The CLI's loader tells an integer (`3`) from a float (`3.0`, `1e3`) and prints large integers
  // exactly; JSON.parse loses both. Only literals JSON.parse reads differently matter: integer-valued
  // floats and integers of 16 digits or more. A regex pass over the text finds them (every number in
  // JSON follows `:`, `[` or `,`; a match inside a string only costs the slower path below). Where one
  // sits anywhere but as a `total_util` value (which takes both kinds), or when the loader refuses a
  // file that has one, the text is parsed again with a reviver that keeps each such number's source
  // text aside, by holder and key (`context.source`; about ten times slower than JSON.parse, so only
  // then). Browsers without `context.source`: a number is a float if it has a fraction.
  const NUMBER_SOURCE = new WeakMap();
  let kept = false; // whether any source was kept: until then no lookup is needed
  const ODD = /("total_util"\s*)?[:[,]\s*(-?\d+(?:\.\d+)?[eE][-+]?\d+|-?\d+\.\d+|-?\d{16,})/g;

  // 0: no literal JSON.parse reads differently; 1: only as `total_util` values; 2: elsewhere too.
  function oddNumbers(text) {
    let found = 0;
    ODD.lastIndex = 0;
    for (let m; (m = ODD.exec(text)) !== null; ) {
      if (!/[.eE]/.test(m[2]) || Number.isInteger(Number(m[2]))) {
        if (m[1] === undefined) return 2;
        found = 1;
      }
    }
    return found;
  }

  function parseExact(text) {
    const keep = function (key, value, context) {
      if (typeof value === "number" && context && typeof context.source === "string" &&
          (!Number.isSafeInteger(value) || /[.eE]/.test(context.source))) {
        kept = true;
        let sources = NUMBER_SOURCE.get(this);
        if (!sources) NUMBER_SOURCE.set(this, (sources = new Map()));
        sources.set(key, context.source);
      }
      return value;
    };
    try {
      return JSON.parse(text, keep);
    } catch (e) {
      if (e instanceof RangeError) fail("not a schedule: its JSON nests deeper than the page can read");
      throw e;
    }
  }

  // A file's text read as the page shows it: { graph, model }, or an Error whose message is the one to show.
  FV.read = function (text) {
    let raw;
    try {
      raw = JSON.parse(text);
    } catch (e) {
      fail(`not valid JSON (${e.message})`);
    }
    if (isObject(raw) && Object.hasOwn(raw, "format") && raw.format === "furiosa-opt-lir-graph") {
      return { graph: true, model: FV.normaliseGraph(raw) };
    }
    const odd = oddNumbers(text);
    let checked;
    try {
      checked = FV.checkSchedule(odd === 2 ? parseExact(text) : raw);
    } catch (e) {
      if (odd !== 1) throw e;
      checked = FV.checkSchedule(parseExact(text)); // the same refusal, with the numbers printed exactly
    }
    return { graph: false, model: FV.normaliseSchedule(checked) };
  };

  const sourceOf = (holder, key) => (kept ? NUMBER_SOURCE.get(holder)?.get(key) : undefined);
  function isFloat(holder, key, value) {
    const source = sourceOf(holder, key);
    return source !== undefined ? /[.eE]/.test(source) : !Number.isInteger(value);
  }
  // str(int) in Python: exact, whatever its size.
  const intText = (holder, key) => sourceOf(holder, key) ?? String(holder[key]);

  // An integer outside [-2^63, 2^63): the CLI refuses it (and names it by its size). Exact, from its source.
  const LIMIT = 2n ** 63n;
  function outside64(holder, key) {
    const value = holder[key];
    if (typeof value !== "number" || Number.isSafeInteger(value) || isFloat(holder, key, value)) return false;
    const big = bigOf(holder, key);
    return big < -LIMIT || big >= LIMIT;
  }
  const bigOf = (holder, key) => BigInt(sourceOf(holder, key) ?? holder[key]);

  // repr(float): the shortest digits that read back, fixed for 1e-4 <= |x| < 1e16, else d.ddde+XX.
  function floatRepr(x) {
    if (Number.isNaN(x)) return "NaN";
    if (!Number.isFinite(x)) return x > 0 ? "Infinity" : "-Infinity";
    if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
    const [mantissa, exponent] = x.toExponential().split("e");
    const sign = x < 0 ? "-" : "", digits = mantissa.replace("-", "").replace(".", ""), e = Number(exponent);
    if (e < -4 || e >= 16) {
      const rest = digits.length > 1 ? `.${digits.slice(1)}` : "";
      return `${sign}${digits[0]}${rest}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
    }
    if (e < 0) return `${sign}0.${"0".repeat(-e - 1)}${digits}`;
    if (e + 1 >= digits.length) return `${sign}${digits}${"0".repeat(e + 1 - digits.length)}.0`;
    return `${sign}${digits.slice(0, e + 1)}.${digits.slice(e + 1)}`;
  }

  // json.dumps(str) with ensure_ascii: \" \\ \n \r \t \b \f, anything else outside ' '..'~' as \uXXXX.
  const ESCAPES = new Map([['"', '\\"'], ["\\", "\\\\"], ["\n", "\\n"], ["\r", "\\r"], ["\t", "\\t"], ["\b", "\\b"], ["\f", "\\f"]]);
  const quote = (s) => `"${s.replace(/[\\"]|[^ -~]/g, (c) => ESCAPES.get(c) ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)}"`;

  // `_show` of the CLI's loader: json.dumps of holder[key], cut to 37 characters and "..." past 40
  // (or `limit`). Only limit + 1 characters are built, so a deep or huge value costs no more than a
  // small one. (Object keys come in JavaScript's order, which puts integer-like keys first; Python
  // keeps the file's order.)
  function show(holder, key, limit = 40) {
    if (outside64(holder, key)) {
      const big = bigOf(holder, key);
      return `an integer of ${(big < 0n ? -big : big).toString(2).length} bits`;
    }
    const out = [];
    let length = 0;
    const put = (text) => {
      out.push(text);
      length += text.length;
      return length > limit;
    };
    const walk = (value, h, k) => {
      if (value === null || typeof value === "boolean") return put(String(value));
      if (typeof value === "number") return put(isFloat(h, k, value) ? floatRepr(value) : intText(h, k));
      if (typeof value === "string") return put(quote(value));
      const array = Array.isArray(value), keys = array ? value.keys() : Object.keys(value);
      if (put(array ? "[" : "{")) return true;
      let first = true;
      for (const i of keys) {
        if (!first && put(", ")) return true;
        first = false;
        if (!array && put(`${quote(i)}: `)) return true;
        if (walk(value[i], value, String(i))) return true;
      }
      return put(array ? "]" : "}");
    };
    walk(holder[key], holder, key);
    const text = out.join("");
    return text.length <= limit ? text : `${text.slice(0, limit - 3)}...`;
  }
  FV.show = show;

  // ---- the CLI's schedule loader rules (src/furiosa_opt/analysis/schedule.py) ----------------------
  // The same checks in the same order with the same messages, so the page refuses exactly what
  // `furiosa-opt schedule` refuses (tests/viewer/test_loader_parity.py runs both on the same inputs).
  const KIND_NAMES = { int: "an integer", float: "a number", str: "a string", list: "a list", dict: "an object" };
  const REQUIRED = Symbol("required");
  const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
  function fits(kind, v, h, k) {
    switch (kind) {
      case "int": return typeof v === "number" && (kept ? !isFloat(h, k, v) : Number.isInteger(v));
      case "float": return typeof v === "number" && isFloat(h, k, v);
      case "str": return typeof v === "string";
      case "list": return Array.isArray(v);
      default: return isObject(v);
    }
  }
  const INT = ["int"], STR = ["str"], LIST = ["list"], DICT = ["dict"], INT_OR_STR = ["int", "str"];
  const NUMBER = ["int", "float"], ID = ["str", "int", "float"];

  // record[key] if it is one of `kinds`; `fallback` when absent or null (no fallback: it is required).
  function get(record, key, where, kinds, fallback = REQUIRED) {
    const value = Object.hasOwn(record, key) ? record[key] : null;
    if (value === null) return fallback === REQUIRED ? fail(`${where}: missing \`${key}\``) : fallback;
    if (!(fits(kinds[0], value, record, key) || (kinds.length > 1 && kinds.slice(1).some((k) => fits(k, value, record, key))))) {
      fail(`${where}.${key}: expected ${kinds.map((kind) => KIND_NAMES[kind]).join(" or ")}, got ${show(record, key)}`);
    }
    if (typeof value === "number" && !Number.isSafeInteger(value) && outside64(record, key)) {
      fail(`${where}.${key}: ${show(record, key)} is outside the 64-bit integers a schedule holds`);
    }
    return value;
  }

  function natural(holder, key, where) {
    if (holder[key] < 0) fail(`${where}: expected a non-negative integer, got ${intText(holder, key)}`);
    return holder[key];
  }

  function object(list, n, where) {
    if (!isObject(list[n])) fail(`${where}: expected an object, got ${show(list, String(n))}`);
    return list[n];
  }

  // A Map key for an integer: the number while it is exact, else its decimal text.
  const intKey = (holder, key) => (Number.isSafeInteger(holder[key]) ? holder[key] : intText(holder, key));

  // An integer to compare exactly: the number while it is exact, else a BigInt (`<` between the two is exact).
  const exact = (holder, key) => (Number.isSafeInteger(holder[key]) ? holder[key] : bigOf(holder, key));

  function interval(lifetime, where) {
    get(lifetime, "begin", where, INT);
    const begin = natural(lifetime, "begin", `${where}.begin`), end = get(lifetime, "end", where, INT);
    if (exact(lifetime, "end") < exact(lifetime, "begin")) {
      fail(`${where}: ends at ${intText(lifetime, "end")}, before it begins at ${intText(lifetime, "begin")}`);
    }
    return [begin, end];
  }

  const SOURCE = /-->\s*(\S+?:\p{Nd}+)(?::\p{Nd}+)?\s*$/u;

  // A parsed schedule checked, as the records the views draw (one pass, no intermediate copies), or an
  // Error whose message is the CLI's. A tensor without an address keeps its details and users but has
  // no box in a memory pane.
  FV.checkSchedule = function (data) {
    if (!isObject(data)) fail("expected a JSON object with `instructions` and `tensors`");
    const rawTensors = get(data, "tensors", "schedule", LIST);
    const tensors = [], byIndex = new Map(); // keyed by the index's decimal text: exact for any integer
    for (let n = 0; n < rawTensors.length; n++) {
      const where = `tensors[${n}]`, record = object(rawTensors, n, where);
      const lifetime = get(record, "lifetime", where, DICT), [begin, end] = interval(lifetime, `${where}.lifetime`);
      const t = {
        kind: "tensor", id: get(record, "index", where, INT), name: get(record, "name", where, STR),
        visaName: get(record, "visa_name", where, STR, ""), buffer: get(record, "buffer_type", where, STR),
        address: get(record, "address", where, INT, null),
        size: (get(record, "size", where, INT), natural(record, "size", `${where}.size`)),
        dtype: get(record, "dtype", where, STR, ""), mapping: get(record, "mapping", where, STR, ""), begin, end,
        blockBegin: typeof lifetime.block_begin === "number" ? lifetime.block_begin : undefined,
        blockEnd: typeof lifetime.block_end === "number" ? lifetime.block_end : undefined, users: [],
      };
      t.top = t.address === null ? null : t.address + Math.max(t.buffer === "Dram" ? t.size : t.size / FV.SLICES, 1);
      const key = intKey(record, "index");
      if (byIndex.has(key)) fail(`${where}.index: tensor ${intText(record, "index")} appears twice`);
      byIndex.set(key, t);
      tensors.push(t);
    }
    // A DMA's memory pathologies ({rule, shown, fix}, each a string) from its report: what the viewer marks.
    // The CLI reads only that `memory` is an object, so anything else in it is passed over, not refused.
    const findingsOf = (memory) => {
      const listed = memory !== null && Array.isArray(memory.findings) ? memory.findings : [];
      return listed.filter((f) => f !== null && typeof f === "object" && ["rule", "shown", "fix"].every((k) => typeof f[k] === "string"));
    };
    const rawInstructions = get(data, "instructions", "schedule", LIST);
    const instructions = [];
    let last = 0, lastText = "0";
    for (let n = 0; n < rawInstructions.length; n++) {
      const where = `instructions[${n}]`, record = object(rawInstructions, n, where);
      const index = get(record, "index", where, INT_OR_STR);
      const lifetime = get(record, "lifetime", where, DICT), [begin, end] = interval(lifetime, `${where}.lifetime`);
      const contexts = get(record, "contexts", where, LIST);
      for (let i = 0; i < contexts.length; i++) {
        if (typeof contexts[i] !== "string") fail(`${where}.contexts[${i}]: expected a string, got ${show(contexts, String(i))}`);
      }
      const description = get(record, "description", where, STR, "");
      let source = get(record, "source", where, STR, null);
      if (source === null) source = SOURCE.exec(description)?.[1] ?? "";
      const util = get(record, "util", where, DICT, null);
      const memory = get(record, "memory", where, DICT, null); // a Tensor DMA's memory report, as the CLI reads it
      const name = get(record, "name", where, STR, null), tpe = get(record, "tpe", where, STR);
      const total = util === null ? null : get(util, "total_util", `${where}.util`, NUMBER);
      const ids = (key) => {
        const list = get(record, key, where, LIST, []), found = [];
        for (let i = 0; i < list.length; i++) {
          if (!fits("int", list[i], list, String(i))) fail(`${where}.${key}[${i}]: expected a tensor index, got ${show(list, String(i))}`);
          const tensor = byIndex.get(intKey(list, String(i)));
          found.push(tensor || fail(`${where}.${key}[${i}]: tensor ${intText(list, String(i))} is not in \`tensors\``));
        }
        return found;
      };
      const ins = {
        kind: "instruction", id: index, name: name ?? `O${index}`, tpe, contexts, lanes: FV.lanesOf(contexts, tpe),
        description, source, begin, end, util: total, inputs: ids("input_tensors"), outputs: ids("output_tensors"),
        critical: false, memory, findings: findingsOf(memory),
      };
      for (const t of ins.inputs) if (t.users[t.users.length - 1] !== ins) t.users.push(ins);
      for (const t of ins.outputs) if (t.users[t.users.length - 1] !== ins) t.users.push(ins); // once per instruction
      if (exact(lifetime, "end") > last) [last, lastText] = [exact(lifetime, "end"), intText(lifetime, "end")];
      instructions.push(ins);
    }
    const makespan = get(data, "makespan", "schedule", INT, Number(last));
    if (Object.hasOwn(data, "makespan") && data.makespan !== null && exact(data, "makespan") < last) {
      fail(`makespan ${intText(data, "makespan")} is before the last instruction's end (${lastText})`);
    }
    return { kernel: get(data, "kernel", "schedule", STR, ""), makespan, instructions, tensors };
  };

  // Ours (format "furiosa-opt-schedule") and upstream's bare {instructions, tensors}, checked, indexed.
  FV.normaliseSchedule = function (checked) {
    const { kernel, makespan, instructions, tensors } = checked;
    let extent = makespan; // the initial cycle range also shows tensors that outlive the last instruction
    for (const t of tensors) extent = Math.max(extent, t.end);
    const schedule = { kernel, makespan, extent, instructions, tensors };
    // Per lane / buffer, sorted by begin, with the longest duration: a range query is a binary search.
    schedule.lanes = Object.create(null);
    schedule.buffers = Object.create(null);
    for (const lane of FV.LANES) schedule.lanes[lane] = FV.index(instructions.filter((o) => o.lanes.includes(lane)));
    for (const b of FV.BUFFERS) schedule.buffers[b] = FV.index(tensors.filter((t) => t.buffer === b && t.address !== null));
    FV.markCriticalPath(schedule);
    return schedule;
  };

  // Sorted by begin, with the longest duration, so a range query is a binary search; the numbers are
  // also kept in typed arrays because the render loops over them read nothing else for most items.
  FV.index = function (items) {
    items.sort((a, b) => a.begin - b.begin || a.end - b.end);
    let longest = 0, top = 0;
    for (const it of items) {
      longest = Math.max(longest, it.end - it.begin);
      top = Math.max(top, it.top || 0);
    }
    const column = (f) => Float64Array.from(items, f);
    return {
      items, longest, top, begins: column((it) => it.begin), ends: column((it) => it.end),
      lows: column((it) => it.address || 0), tops: column((it) => it.top || 0),
    };
  };

  // The first item that can meet a range starting at t0: nothing earlier ends at or after t0.
  FV.firstIndex = function (indexed, t0) {
    const begins = indexed.begins, t = t0 - indexed.longest;
    let lo = 0, hi = begins.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (begins[mid] < t) lo = mid + 1; else hi = mid;
    }
    return lo;
  };

  // Calls fn for each item whose closed interval [begin, end] meets [t0, t1]: the one visibility rule.
  FV.eachInRange = function (indexed, t0, t1, fn) {
    const { items, begins, ends } = indexed;
    for (let i = FV.firstIndex(indexed, t0); i < items.length && begins[i] <= t1; i++) {
      if (ends[i] >= t0) fn(items[i]);
    }
  };

  // A tensor box meets the address window [lo, hi).
  FV.within = (t, lo, hi) => t.top > lo && t.address < hi;

  // The chain that ends at the makespan: from the last instruction, step to the producer of an input
  // (or the previous instruction of a shared lane) that finishes latest, no later than this one starts.
  FV.markCriticalPath = function (schedule) {
    const producers = new Map();
    for (const o of schedule.instructions) for (const t of o.outputs) {
      if (!producers.has(t)) producers.set(t, []);
      producers.get(t).push(o);
    }
    let current = null;
    for (const o of schedule.instructions) if (o.lanes.length && (!current || o.end > current.end)) current = o;
    const path = [];
    while (current && !current.critical) {
      current.critical = true;
      path.push(current);
      let best = null;
      const consider = (p) => {
        if (p !== current && !p.critical && p.lanes.length && p.end <= current.begin && (!best || p.end > best.end)) best = p;
      };
      for (const t of current.inputs) for (const p of producers.get(t) || []) consider(p);
      for (const lane of current.lanes) {
        // A lane is an in-order stream: the lane predecessor is among the few that begin just before.
        const items = schedule.lanes[lane].items;
        let lo = 0, hi = items.length;
        while (lo < hi) {
          const mid = (lo + hi) >> 1;
          if (items[mid].begin <= current.begin) lo = mid + 1; else hi = mid;
        }
        for (let i = lo - 1, n = 0; i >= 0 && n < 8; i--, n++) consider(items[i]);
      }
      current = best;
    }
    schedule.criticalPath = path.reverse();
  };

  // ---- LIR graph ---------------------------------------------------------------------------------

  // `--dump-graph` JSON (docs/lir.md). Ids may be strings or numbers and name nodes as text; labels
  // and kinds are strings; every node keeps its fields for the sidebar.
  FV.normaliseGraph = function (raw) {
    const nodes = get(raw, "nodes", "graph", LIST), edges = get(raw, "edges", "graph", LIST);
    const name = (record, key, where) => {
      const value = get(record, key, where, ID);
      return typeof value === "string" ? value : show(record, key);
    };
    const byId = new Map();
    const graph = { kernel: get(raw, "kernel", "graph", STR, ""), byId, edges: [] };
    graph.nodes = nodes.map((_, i) => {
      const where = `nodes[${i}]`, record = object(nodes, i, where), id = name(record, "id", where);
      const label = get(record, "label", where, STR, id), kind = get(record, "kind", where, STR, "");
      const node = { id, label, kind, fields: record, inEdges: [], outEdges: [] };
      if (byId.has(id)) fail(`${where}.id: node ${quote(id)} appears twice`);
      byId.set(id, node);
      return node;
    });
    edges.forEach((_, i) => {
      const where = `edges[${i}]`, record = object(edges, i, where);
      const [from, to] = ["from", "to"].map((key) => {
        const id = name(record, key, where);
        return byId.get(id) || fail(`${where}.${key}: no node ${quote(id)}`);
      });
      const edge = { from, to, kind: get(record, "kind", where, STR, "") };
      from.outEdges.push(edge);
      to.inEdges.push(edge);
      graph.edges.push(edge);
    });
    FV.layoutGraph(graph);
    return graph;
  };

  // Longest-path layering (back edges of a cycle ignored), then barycentric ordering sweeps. The
  // layering walks the in-edges depth first with its own stack, so a chain of any length fits.
  FV.layoutGraph = function (graph) {
    const BUSY = 1, DONE = 2, state = new Map();
    for (const root of graph.nodes) {
      if (state.has(root)) continue;
      state.set(root, BUSY);
      root.layer = 0;
      const stack = [[root, 0]];
      while (stack.length) {
        const frame = stack[stack.length - 1], n = frame[0];
        if (frame[1] < n.inEdges.length) {
          const m = n.inEdges[frame[1]++].from, s = state.get(m);
          if (s === DONE) n.layer = Math.max(n.layer, m.layer + 1);
          else if (s === undefined) {
            state.set(m, BUSY);
            m.layer = 0;
            stack.push([m, 0]);
          } // BUSY: a back edge of a cycle
        } else {
          state.set(n, DONE);
          stack.pop();
          if (stack.length) {
            const parent = stack[stack.length - 1][0];
            parent.layer = Math.max(parent.layer, n.layer + 1);
          }
        }
      }
    }
    const layers = [];
    for (const n of graph.nodes) (layers[n.layer] = layers[n.layer] || []).push(n);
    const place = (layer) => layer.forEach((n, i) => (n.order = i));
    layers.forEach(place);
    const sweep = (layer, neighbours) => {
      for (const n of layer) {
        const ns = neighbours(n);
        n.bary = ns.length ? ns.reduce((s, m) => s + m.order, 0) / ns.length : n.order;
      }
      layer.sort((a, b) => a.bary - b.bary);
      place(layer);
    };
    for (let pass = 0; pass < 4; pass++) {
      for (let i = 1; i < layers.length; i++) sweep(layers[i], (n) => n.inEdges.map((e) => e.from).filter((m) => m.layer === i - 1));
      for (let i = layers.length - 2; i >= 0; i--) sweep(layers[i], (n) => n.outEdges.map((e) => e.to).filter((m) => m.layer === i + 1));
    }
    let widest = 1;
    for (const layer of layers) widest = Math.max(widest, layer.length);
    for (const layer of layers) {
      const offset = (widest - layer.length) / 2;
      for (const n of layer) {
        n.x = (n.order + offset) * FV.NODE_GAP_X;
        n.y = n.layer * FV.NODE_GAP_Y;
      }
    }
    graph.layers = layers;
  };
  FV.NODE_W = 150;
  FV.NODE_H = 34;
  FV.NODE_GAP_X = 180;
  FV.NODE_GAP_Y = 80;
})();
