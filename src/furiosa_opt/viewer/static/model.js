// Reading the two input formats into plain objects the views draw. No DOM here.
// Every string from a file stays data: the views render it with textContent or fillText only.
"use strict";

const FV = (window.FV = window.FV || {});

FV.LANES = ["Main", "Sub", "VE", "TDMA", "PDMA", "Core"];
FV.BUFFERS = ["Sram", "Trf", "Vrf", "Spm", "Dram"];
// Register files and SRAM are addressed per slice; the JSON's size is summed over the 512 slices.
FV.SLICES = 512;
const CONTEXT_LANE = {
  MainContext: "Main", Main: "Main", SubContext: "Sub", Sub: "Sub", VectorEngine: "VE", VE: "VE",
  DmaEngine: "TDMA", TDMA: "TDMA", PcieDma: "PDMA", PDMA: "PDMA", Core: "Core", CoreContext: "Core",
};

function fail(message) {
  throw new Error(message);
}

function num(value, what) {
  if (typeof value !== "number" || !Number.isFinite(value)) fail(`${what}: expected a number, got ${JSON.stringify(value)}`);
  return value;
}

function str(value) {
  return value === undefined || value === null ? "" : String(value);
}

// The lanes an instruction occupies: its contexts, plus Core for a Core instruction. Noop and views: none.
FV.lanesOf = function (contexts, tpe) {
  const lanes = [];
  for (const c of contexts) {
    const lane = CONTEXT_LANE[c];
    if (lane && !lanes.includes(lane)) lanes.push(lane);
  }
  if (tpe === "Core" && !lanes.includes("Core")) lanes.push("Core");
  return lanes;
};

// Ours (format "furiosa-opt-schedule") and upstream's bare {instructions, tensors} both land here.
FV.normaliseSchedule = function (raw) {
  if (!raw || typeof raw !== "object" || !Array.isArray(raw.instructions) || !Array.isArray(raw.tensors)) {
    fail('not a schedule: expected top-level "instructions" and "tensors" arrays');
  }
  const tensors = raw.tensors.map((t, i) => {
    if (!t || typeof t !== "object") fail(`tensors[${i}]: expected an object`);
    const life = t.lifetime || fail(`tensors[${i}]: missing "lifetime"`);
    const buffer = str(t.buffer_type);
    const size = num(t.size, `tensors[${i}].size`);
    const perSlice = buffer === "Dram" ? size : size / FV.SLICES;
    const address = num(t.address, `tensors[${i}].address`);
    return {
      kind: "tensor", id: t.index ?? i, name: str(t.name ?? `T${t.index ?? i}`), visaName: str(t.visa_name),
      buffer, address, size, top: address + Math.max(perSlice, 1), dtype: str(t.dtype), mapping: str(t.mapping),
      begin: num(life.begin, `tensors[${i}].lifetime.begin`), end: num(life.end, `tensors[${i}].lifetime.end`),
      blockBegin: life.block_begin, blockEnd: life.block_end, users: [],
    };
  });
  const tensorById = new Map(tensors.map((t) => [t.id, t]));
  const ref = (list, i, what) => (Array.isArray(list) ? list : []).map((id) => {
    return tensorById.get(id) || fail(`instructions[${i}].${what}: no tensor with index ${JSON.stringify(id)}`);
  });
  const instructions = raw.instructions.map((o, i) => {
    if (!o || typeof o !== "object") fail(`instructions[${i}]: expected an object`);
    const life = o.lifetime || fail(`instructions[${i}]: missing "lifetime"`);
    const contexts = Array.isArray(o.contexts) ? o.contexts.map(str) : [];
    const description = str(o.description);
    const arrow = description.lastIndexOf("--> ");
    const ins = {
      kind: "instruction", id: o.index ?? i, name: str(o.name ?? `O${o.index ?? i}`), tpe: str(o.tpe),
      contexts, lanes: FV.lanesOf(contexts, str(o.tpe)), description,
      source: str(o.source ?? (arrow >= 0 ? description.slice(arrow + 4).trim() : "")),
      begin: num(life.begin, `instructions[${i}].lifetime.begin`), end: num(life.end, `instructions[${i}].lifetime.end`),
      util: o.util && typeof o.util.total_util === "number" ? o.util.total_util : null,
      inputs: ref(o.input_tensors, i, "input_tensors"), outputs: ref(o.output_tensors, i, "output_tensors"),
      critical: false,
    };
    for (const t of [...ins.inputs, ...ins.outputs]) if (!t.users.includes(ins)) t.users.push(ins);
    return ins;
  });
  let makespan = typeof raw.makespan === "number" ? raw.makespan : 0;
  for (const o of instructions) makespan = Math.max(makespan, o.end);
  for (const t of tensors) makespan = Math.max(makespan, t.end);
  const schedule = { kernel: str(raw.kernel), makespan, instructions, tensors, lanes: {}, buffers: {} };
  // Per lane / buffer, sorted by begin, with the longest duration: a range query is a binary search.
  for (const lane of FV.LANES) schedule.lanes[lane] = FV.index(instructions.filter((o) => o.lanes.includes(lane)));
  for (const b of FV.BUFFERS) schedule.buffers[b] = FV.index(tensors.filter((t) => t.buffer === b));
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

FV.normaliseGraph = function (raw) {
  if (!Array.isArray(raw.nodes) || !Array.isArray(raw.edges)) fail('not an LIR graph: expected "nodes" and "edges" arrays');
  const nodes = raw.nodes.map((n, i) => {
    if (!n || typeof n !== "object" || n.id === undefined) fail(`nodes[${i}]: expected an object with an "id"`);
    return { id: str(n.id), label: str(n.label ?? n.id), kind: str(n.kind), fields: n, inEdges: [], outEdges: [] };
  });
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const edges = raw.edges.map((e, i) => {
    const from = byId.get(str(e && e.from)), to = byId.get(str(e && e.to));
    if (!from || !to) fail(`edges[${i}]: "from" and "to" must name nodes`);
    const edge = { from, to, kind: str(e.kind) };
    from.outEdges.push(edge);
    to.inEdges.push(edge);
    return edge;
  });
  const graph = { kernel: str(raw.kernel), nodes, edges, byId };
  FV.layoutGraph(graph);
  return graph;
};

// Longest-path layering (back edges of a cycle ignored), then barycentric ordering sweeps.
FV.layoutGraph = function (graph) {
  const state = new Map();
  const layerOf = (n) => {
    if (state.get(n) === "done") return n.layer;
    state.set(n, "busy");
    let layer = 0;
    for (const e of n.inEdges) if (state.get(e.from) !== "busy") layer = Math.max(layer, layerOf(e.from) + 1);
    n.layer = layer;
    state.set(n, "done");
    return layer;
  };
  const layers = [];
  for (const n of graph.nodes) {
    layerOf(n);
    (layers[n.layer] = layers[n.layer] || []).push(n);
  }
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
  const widest = Math.max(1, ...layers.map((l) => l.length));
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
