// The Schedule Viewer: one canvas with a time axis, a lane per context and a memory pane per buffer.
// render() decides what is visible and draws it; visibleNames() replays the same range walks with the
// parameters the last render used, so the test hooks report exactly what was drawn.
"use strict";

(function () {
  const FV = window.FV;
  const LEFT = 64, RIGHT = 12, AXIS_H = 30, LANE_H = 22, PANE_H = 104, GAP = 10;
  const COLOURS = new Map(Object.entries({ // by instruction type, a string from the file: a Map, never an object
    DmaLoad: "#4e79a7", DmaStore: "#59a14f", DmaGather: "#76b7b2", Dma: "#86bcb6", Main: "#f28e2b",
    Sub: "#e1b12c", Core: "#b07aa1", Noop: "#bab0ac",
  }));
  const PALETTE = [...new Set(COLOURS.values()), "#9c755f"];
  const colourIndex = (tpe) => PALETTE.indexOf(COLOURS.get(tpe) || "#9c755f");
  // A DMA with memory findings (`marked`): an amber band across its top and, where the box has room, a
  // warning triangle at its right end, so the mark reads without colour and apart from the red critical path.
  const MARK_H = 4, MARK_FILL = "#ff7f0e", GLYPH_W = 12, GLYPH_ROOM = 24;
  const PANE_FILL = { Sram: "#a0cbe8", Trf: "#ffbe7d", Vrf: "#8cd17d", Spm: "#f1ce63", Dram: "#d4a6c8" };

  function fmt(n) {
    return Math.round(n).toLocaleString("en-US");
  }

  // Boxes that touch within a pixel share one rectangle: extends `run` ([x0, x1]) over the box, or adds
  // the run to `path` and starts a new one. Returns the run now open.
  function runTo(run, x0, x1, path, top, tall) {
    if (run && x0 <= run[1] + 1) {
      run[1] = Math.max(run[1], x1);
      return run;
    }
    if (run) path.rect(run[0], top, run[1] - run[0], tall);
    return [x0, x1];
  }

  // The warning triangle of a marked box ending at x1, in the same path as the bands: one fill for all.
  function glyph(path, x1, top, tall) {
    const mid = x1 - GLYPH_W / 2 - 2;
    path.moveTo(mid, top + 1);
    path.lineTo(mid + GLYPH_W / 2, top + tall - 1);
    path.lineTo(mid - GLYPH_W / 2, top + tall - 1);
    path.closePath();
    return [mid, top + tall / 2 + 2]; // where its "!" goes
  }

  class ScheduleView {
    constructor(canvas, schedule, onChange) {
      this.canvas = canvas;
      this.s = schedule;
      this.onChange = onChange;
      this.brushMode = false;
      this.selection = null;
      this.hover = null;
      this.drag = null;
      // Per lane, parallel to its sorted items: colour index and critical-path flag for the render loop.
      this.colours = {};
      this.critical = {};
      this.marked = {}; // DMAs whose memory report names a pathology: amber band and warning triangle
      for (const lane of FV.LANES) {
        const items = schedule.lanes[lane].items;
        this.colours[lane] = Uint8Array.from(items, (o) => colourIndex(o.tpe));
        this.critical[lane] = Uint8Array.from(items, (o) => (o.critical ? 1 : 0));
        this.marked[lane] = Uint8Array.from(items, (o) => (o.findings && o.findings.length ? 1 : 0));
      }
      this.reset(false);
      this.listen();
    }

    // ---- geometry -----------------------------------------------------------------------------
    get width() { return this.w || this.canvas.clientWidth; }
    laneY(i) { return AXIS_H + i * LANE_H; }
    paneY(i) { return AXIS_H + FV.LANES.length * LANE_H + GAP + i * (PANE_H + GAP); }
    height() { return this.paneY(FV.BUFFERS.length); }
    x(t) { return LEFT + ((t - this.t0) / (this.t1 - this.t0)) * (this.width - LEFT - RIGHT); }
    t(x) { return this.t0 + ((x - LEFT) / (this.width - LEFT - RIGHT)) * (this.t1 - this.t0); }
    addrRange(b) {
      return this.addr[b] || [0, Math.max(this.s.buffers[b].top, 1)];
    }
    yOf(b, a) {
      const [lo, hi] = this.addrRange(b), i = FV.BUFFERS.indexOf(b);
      return this.paneY(i) + PANE_H - ((a - lo) / (hi - lo)) * PANE_H;
    }
    aOf(b, y) {
      const [lo, hi] = this.addrRange(b), i = FV.BUFFERS.indexOf(b);
      return lo + ((this.paneY(i) + PANE_H - y) / PANE_H) * (hi - lo);
    }
    where(y) {
      if (y < AXIS_H) return { area: "axis" };
      const lane = Math.floor((y - AXIS_H) / LANE_H);
      if (lane < FV.LANES.length) return { area: "lane", lane: FV.LANES[lane] };
      for (let i = 0; i < FV.BUFFERS.length; i++) {
        if (y >= this.paneY(i) && y <= this.paneY(i) + PANE_H) return { area: "pane", buffer: FV.BUFFERS[i] };
      }
      return { area: "none" };
    }

    // ---- state --------------------------------------------------------------------------------
    reset(draw = true) {
      this.t0 = 0;
      this.t1 = Math.max(this.s.extent, 1);
      this.addr = {};
      if (draw) this.changed();
    }
    setRange(t0, t1) {
      if (!(t1 > t0)) return;
      this.t0 = t0;
      this.t1 = t1;
      this.changed();
    }
    setAddressRange(buffer, lo, hi) {
      if (!(hi > lo)) return;
      this.addr[buffer] = [lo, hi];
      this.changed();
    }
    select(item) {
      this.selection = item;
      this.changed();
    }
    changed() {
      this.render();
      this.onChange(this);
    }
    connected(item) {
      if (!item) return new Set();
      return new Set(item.kind === "instruction" ? [item, ...item.inputs, ...item.outputs] : [item, ...item.users]);
    }

    // ---- drawing: visibility and pixels come from this one pass --------------------------------
    render() {
      const started = performance.now();
      this.w = this.canvas.clientWidth; // read once: a layout query per box would dominate the frame
      const c = this.canvas, dpr = window.devicePixelRatio || 1, w = this.w, h = this.height();
      if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
        c.width = Math.round(w * dpr);
        c.height = Math.round(h * dpr);
        c.style.height = `${h}px`;
      }
      const g = c.getContext("2d");
      g.setTransform(dpr, 0, 0, dpr, 0, 0);
      g.clearRect(0, 0, w, h);
      g.font = "11px system-ui, sans-serif";
      g.textBaseline = "middle";
      const hot = this.connected(this.hover || this.selection);
      const outlined = [], critical = new Path2D(), marks = new Path2D(), bangs = [], labels = [], right = w - RIGHT;
      const sx = (right - LEFT) / (this.t1 - this.t0); // x(t) = LEFT + (t - t0) * sx, inlined in the loops
      const dots = new Uint8Array((Math.ceil(w) + 2) * (PANE_H + 2));
      const drawn = { t0: this.t0, t1: this.t1, addr: {} };
      this.drawAxis(g, w);
      const paths = PALETTE.map(() => new Path2D());
      const t0 = this.t0, t1 = this.t1;
      FV.LANES.forEach((lane, i) => {
        const y = this.laneY(i), top = y + 3, tall = LANE_H - 6;
        g.fillStyle = i % 2 ? "#f7f7f7" : "#ffffff";
        g.fillRect(LEFT, y, w - LEFT - RIGHT, LANE_H);
        g.fillStyle = "#333";
        g.fillText(lane, 6, y + LANE_H / 2);
        // Boxes of one colour that touch within a pixel merge into one run: at full zoom a lane holds
        // tens of thousands of instructions but only as many distinct rectangles as it has pixels.
        const L = this.s.lanes[lane], { items, begins, ends } = L, colours = this.colours[lane], crit = this.critical[lane];
        const mark = this.marked[lane];
        const runs = PALETTE.map(() => null);
        let critRun = null, markRun = null;
        for (let k = FV.firstIndex(L, t0); k < items.length && begins[k] <= t1; k++) {
          if (ends[k] < t0) continue;
          const x0 = Math.max(LEFT + (begins[k] - t0) * sx, LEFT);
          const x1 = Math.min(Math.max(LEFT + (ends[k] - t0) * sx, x0 + 1), right);
          const c = colours[k];
          runs[c] = runTo(runs[c], x0, x1, paths[c], top, tall);
          if (crit[k]) critRun = runTo(critRun, x0, x1, critical, top, tall);
          const glyphed = mark[k] && x1 - x0 >= GLYPH_ROOM; // a narrower box keeps the band alone
          if (mark[k]) markRun = runTo(markRun, x0, x1, marks, top, MARK_H);
          if (glyphed) bangs.push(glyph(marks, x1, top, tall));
          if (hot.size && hot.has(items[k])) outlined.push([x0, top, x1 - x0, tall]);
          if (x1 - x0 > 30) labels.push([items[k].name, x0 + 3, y + LANE_H / 2, x1 - x0 - 6 - (glyphed ? GLYPH_W + 4 : 0)]);
        }
        runs.forEach((run, c) => run && paths[c].rect(run[0], top, run[1] - run[0], tall));
        if (critRun) critical.rect(critRun[0], top, critRun[1] - critRun[0], tall);
        if (markRun) marks.rect(markRun[0], top, markRun[1] - markRun[0], MARK_H);
      });
      FV.BUFFERS.forEach((b, i) => {
        const y = this.paneY(i), [lo, hi] = this.addrRange(b);
        drawn.addr[b] = [lo, hi];
        g.fillStyle = "#fbfbfb";
        g.fillRect(LEFT, y, w - LEFT - RIGHT, PANE_H);
        g.strokeStyle = "#ddd";
        g.strokeRect(LEFT, y, w - LEFT - RIGHT, PANE_H);
        g.fillStyle = "#333";
        g.fillText(b, 6, y + 10);
        g.fillStyle = "#888";
        g.fillText(fmt(hi), 6, y + 26);
        g.fillText(fmt(lo), 6, y + PANE_H - 8);
        const fill = new Path2D(), bottom = y + PANE_H, sy = PANE_H / (hi - lo), base = bottom + lo * sy;
        const T = this.s.buffers[b], { items, begins, ends, lows, tops } = T;
        let count = 0;
        dots.fill(0);
        for (let k = FV.firstIndex(T, t0); k < items.length && begins[k] <= t1; k++) {
          if (ends[k] < t0 || tops[k] <= lo || lows[k] >= hi) continue; // the test of FV.within
          count++;
          const x0 = Math.max(LEFT + (begins[k] - t0) * sx, LEFT);
          const x1 = Math.min(Math.max(LEFT + (ends[k] - t0) * sx, x0 + 1), right);
          const yTop = Math.max(base - tops[k] * sy, y), height = Math.max(Math.min(base - lows[k] * sy, bottom) - yTop, 1);
          if (hot.size && hot.has(items[k])) outlined.push([x0, yTop, x1 - x0, height]);
          if (x1 - x0 <= 1.5 && height <= 1.5) {
            // a dot: one per pixel is enough, and skipping the rest saves most of the path building
            const cell = Math.round(x0) * (PANE_H + 2) + Math.round(yTop - y);
            if (dots[cell]) continue;
            dots[cell] = 1;
          }
          fill.rect(x0, yTop, x1 - x0, height);
          if (x1 - x0 > 30 && height > 12) labels.push([items[k].name, x0 + 3, yTop + Math.min(height, 24) / 2, x1 - x0 - 6]);
        }
        g.fillStyle = PANE_FILL[b];
        g.fill(fill);
        if (count < 5000) { // edges help only while boxes are few enough to tell apart
          g.strokeStyle = "rgba(0,0,0,0.35)";
          g.lineWidth = 0.5;
          g.stroke(fill);
          g.lineWidth = 1;
        }
      });
      paths.forEach((path, c) => {
        g.fillStyle = PALETTE[c];
        g.fill(path);
      });
      g.fillStyle = MARK_FILL;
      g.fill(marks);
      g.fillStyle = "#111";
      for (const [text, lx, ly, room] of labels) g.fillText(text, lx, ly, room);
      g.textAlign = "center";
      for (const [bx, by] of bangs) g.fillText("!", bx, by);
      g.textAlign = "left";
      g.strokeStyle = "#d62728";
      g.lineWidth = 1.5;
      g.stroke(critical);
      this.outline(g, outlined, "#111", 2);
      this.drawMakespan(g, h);
      if (this.drag && this.drag.band) this.drawBand(g);
      this.drawn = drawn;
      this.highlighted = [...hot].map((it) => it.name);
      this.lastFrameMs = performance.now() - started;
    }
    visibleNames(kind) {
      const d = this.drawn, names = [];
      if (kind === "instruction") {
        for (const lane of FV.LANES) FV.eachInRange(this.s.lanes[lane], d.t0, d.t1, (o) => names.push(o.name));
      } else {
        for (const b of FV.BUFFERS) {
          const [lo, hi] = d.addr[b];
          FV.eachInRange(this.s.buffers[b], d.t0, d.t1, (t) => FV.within(t, lo, hi) && names.push(t.name));
        }
      }
      return [...new Set(names)];
    }
    outline(g, boxes, colour, width) {
      if (!boxes.length) return;
      const p = new Path2D();
      for (const b of boxes) p.rect(...b);
      g.strokeStyle = colour;
      g.lineWidth = width;
      g.stroke(p);
      g.lineWidth = 1;
    }
    drawAxis(g, w) {
      g.fillStyle = "#eef2f7";
      g.fillRect(LEFT, 0, w - LEFT - RIGHT, AXIS_H);
      g.fillStyle = "#333";
      g.fillText("cycles", 6, AXIS_H / 2);
      const span = this.t1 - this.t0, raw = span / 8, step = 10 ** Math.floor(Math.log10(raw));
      const tick = [1, 2, 5, 10].map((k) => k * step).find((s) => s >= raw) || raw;
      g.strokeStyle = "#bbb";
      for (let t = Math.ceil(this.t0 / tick) * tick; t <= this.t1; t += tick) {
        const x = this.x(t);
        g.beginPath();
        g.moveTo(x, AXIS_H - 8);
        g.lineTo(x, AXIS_H);
        g.stroke();
        g.fillText(fmt(t), x + 2, AXIS_H / 2 - 2);
      }
    }
    drawMakespan(g, h) {
      if (this.s.makespan < this.t0 || this.s.makespan > this.t1) return;
      const x = this.x(this.s.makespan);
      g.save();
      g.setLineDash([4, 3]);
      g.strokeStyle = "#d62728";
      g.beginPath();
      g.moveTo(x, 0);
      g.lineTo(x, h);
      g.stroke();
      g.restore();
      g.fillStyle = "#d62728";
      g.textAlign = "right";
      g.fillText(`makespan ${fmt(this.s.makespan)}`, x - 4, AXIS_H - 8);
      g.textAlign = "left";
    }
    drawBand(g) {
      const d = this.drag, x0 = Math.min(d.x0, d.x), x1 = Math.max(d.x0, d.x);
      g.fillStyle = "rgba(31,119,180,0.15)";
      g.strokeStyle = "#1f77b4";
      const y0 = d.area === "pane" ? Math.min(d.y0, d.y) : 0;
      const y1 = d.area === "pane" ? Math.max(d.y0, d.y) : this.height();
      g.fillRect(x0, y0, x1 - x0, y1 - y0);
      g.strokeRect(x0, y0, x1 - x0, y1 - y0);
    }

    // ---- hit testing ----------------------------------------------------------------------------
    hit(x, y) {
      const where = this.where(y), tol = (3 * (this.t1 - this.t0)) / (this.width - LEFT - RIGHT);
      const t = this.t(x);
      let best = null;
      if (where.area === "lane") {
        FV.eachInRange(this.s.lanes[where.lane], t - tol, t + tol, (o) => {
          if (!best || o.end - o.begin < best.end - best.begin) best = o;
        });
      } else if (where.area === "pane") {
        const b = where.buffer, slack = Math.abs(this.aOf(b, y) - this.aOf(b, y + 3));
        const a = this.aOf(b, y);
        FV.eachInRange(this.s.buffers[b], t - tol, t + tol, (it) => {
          if (a >= it.address - slack && a <= it.top + slack && (!best || it.size < best.size)) best = it;
        });
      }
      return best;
    }
    // Page rectangle of an instruction's box in its first lane, as render() computes it (for tests that
    // read the pixels of its marks).
    box(name) {
      const o = this.s.instructions.find((i) => i.name === name && i.lanes.length);
      if (!o) return null;
      const r = this.canvas.getBoundingClientRect(), x0 = Math.max(this.x(o.begin), LEFT);
      const x1 = Math.min(Math.max(this.x(o.end), x0 + 1), this.width - RIGHT);
      const top = this.laneY(FV.LANES.indexOf(o.lanes[0])) + 3;
      return { left: r.left + x0, right: r.left + x1, top: r.top + top, bottom: r.top + top + LANE_H - 6 };
    }
    // Page coordinates of an item's box centre (for tests and for centring): the drawing's geometry.
    locate(name) {
      const box = this.box(name);
      if (box) return { x: (box.left + box.right) / 2, y: (box.top + box.bottom) / 2 };
      const rect = this.canvas.getBoundingClientRect();
      const mid = (a, b) => (Math.max(this.x(a), LEFT) + Math.min(Math.max(this.x(b), this.x(a) + 1), this.width - RIGHT)) / 2;
      const t = this.s.tensors.find((i) => i.name === name);
      if (!t || t.address === null) return null; // a tensor without an address has no box
      const b = t.buffer, yTop = Math.max(this.yOf(b, t.top), this.paneY(FV.BUFFERS.indexOf(b)));
      const yBottom = Math.min(this.yOf(b, t.address), this.paneY(FV.BUFFERS.indexOf(b)) + PANE_H);
      return { x: rect.left + mid(t.begin, t.end), y: rect.top + (yTop + yBottom) / 2 };
    }

    // Page coordinates of a memory pane (for tests driving the brush).
    paneRect(buffer) {
      const r = this.canvas.getBoundingClientRect(), y = this.paneY(FV.BUFFERS.indexOf(buffer));
      return { left: r.left + LEFT, right: r.left + this.width - RIGHT, top: r.top + y, bottom: r.top + y + PANE_H };
    }

    // ---- input ----------------------------------------------------------------------------------
    listen() {
      const c = this.canvas, pos = (e) => {
        const r = c.getBoundingClientRect();
        return [e.clientX - r.left, e.clientY - r.top];
      };
      this.handlers = {
        mousedown: (e) => {
          const [x, y] = pos(e), where = this.where(y);
          const kind = where.area === "axis" ? "range" : this.brushMode && where.area === "pane" ? "brush" : "pan";
          this.drag = { kind, area: where.area, buffer: where.buffer, x0: x, y0: y, x, y, t0: this.t0, t1: this.t1, moved: false };
        },
        mousemove: (e) => {
          const [x, y] = pos(e), d = this.drag;
          if (!d) {
            const hover = this.hit(x, y);
            if (hover !== this.hover) {
              this.hover = hover;
              this.render();
              this.onChange(this);
            }
            return;
          }
          d.x = x;
          d.y = y;
          d.moved = d.moved || Math.abs(x - d.x0) > 3 || Math.abs(y - d.y0) > 3;
          if (d.kind === "pan" && d.moved) {
            const dt = ((x - d.x0) / (this.width - LEFT - RIGHT)) * (d.t1 - d.t0);
            this.t0 = d.t0 - dt;
            this.t1 = d.t1 - dt;
          }
          d.band = d.kind !== "pan" && d.moved;
          this.render();
        },
        mouseup: (e) => {
          const d = this.drag;
          if (!d) return;
          const [x, y] = pos(e);
          this.drag = null;
          if (!d.moved) {
            if (d.area === "axis") this.reset();
            else this.select(this.hit(x, y));
            return;
          }
          if (d.kind === "range" || d.kind === "brush") {
            const ta = this.t(Math.min(d.x0, x)), tb = this.t(Math.max(d.x0, x));
            if (d.kind === "brush") this.addr[d.buffer] = [this.aOf(d.buffer, Math.max(d.y0, y)), this.aOf(d.buffer, Math.min(d.y0, y))];
            this.setRange(ta, tb);
          } else this.changed();
        },
        mouseleave: () => {
          if (this.hover && !this.drag) {
            this.hover = null;
            this.changed();
          }
        },
        wheel: (e) => {
          e.preventDefault();
          const [x] = pos(e), t = this.t(Math.min(Math.max(x, LEFT), this.width - RIGHT));
          const k = Math.exp(e.deltaY * 0.002);
          this.setRange(t - (t - this.t0) * k, t + (this.t1 - t) * k);
        },
      };
      for (const [name, fn] of Object.entries(this.handlers)) c.addEventListener(name, fn, { passive: name !== "wheel" });
    }
    destroy() {
      for (const [name, fn] of Object.entries(this.handlers)) this.canvas.removeEventListener(name, fn);
    }
  }

  FV.ScheduleView = ScheduleView;
})();
