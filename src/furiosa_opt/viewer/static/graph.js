// The IR graph viewer: the layered layout from model.js drawn on a canvas with pan, zoom and search.
"use strict";

(function () {
  const FV = window.FV;
  // Looked up by kinds from the file: Maps, never plain objects (which would answer "__proto__").
  const FILL = new Map([["tensor", "#e3eefa"], ["command", "#fde9d4"]]);
  const EDGE = new Map([["data", "#666"], ["order", "#1f77b4"], ["sync", "#d62728"]]);
  const MAX_FIT_ZOOM = 2.5; // a small graph is fitted up to this scale, not blown up to fill the window

  // A filled triangle with its tip at (bx, by), pointing along the segment from (ax, ay).
  function arrowhead(path, ax, ay, bx, by, size) {
    const length = Math.hypot(bx - ax, by - ay);
    if (length < 1) return;
    const ux = (bx - ax) / length, uy = (by - ay) / length;
    path.moveTo(bx, by);
    path.lineTo(bx - size * ux + (size / 2) * uy, by - size * uy - (size / 2) * ux);
    path.lineTo(bx - size * ux - (size / 2) * uy, by - size * uy + (size / 2) * ux);
    path.closePath();
  }

  class GraphView {
    constructor(canvas, graph, onChange) {
      this.canvas = canvas;
      this.g = graph;
      this.onChange = onChange;
      this.selection = null;
      this.matches = [];
      this.drag = null;
      this.fit(false);
      this.listen();
    }
    // The canvas fills the window below its top (at least 480 px), so a fitted graph uses the whole view.
    // Measured once per fit and frame, never per node: reading the layout forces the browser to compute it.
    measure() {
      this.width = this.canvas.clientWidth;
      this.height = Math.max(480, Math.floor(window.innerHeight - this.canvas.getBoundingClientRect().top - 12));
    }
    toScreen(n) { return [(n.x - this.cx) * this.zoom + this.width / 2, (n.y - this.cy) * this.zoom + this.height / 2]; }
    toWorld(x, y) { return [(x - this.width / 2) / this.zoom + this.cx, (y - this.height / 2) / this.zoom + this.cy]; }

    fit(draw = true) {
      this.measure();
      let x0 = 0, x1 = 0, y0 = 0, y1 = 0; // loops, not Math.min(...xs): a spread of 200,000 arguments throws
      for (const n of this.g.nodes) {
        x0 = Math.min(x0, n.x);
        x1 = Math.max(x1, n.x);
        y0 = Math.min(y0, n.y);
        y1 = Math.max(y1, n.y);
      }
      x1 += FV.NODE_W;
      y1 += FV.NODE_H;
      this.cx = (x0 + x1) / 2;
      this.cy = (y0 + y1) / 2;
      this.zoom = Math.min(MAX_FIT_ZOOM, (this.width - 40) / (x1 - x0), (this.height - 40) / (y1 - y0));
      if (draw) this.changed();
    }
    centre(node) {
      this.cx = node.x + FV.NODE_W / 2;
      this.cy = node.y + FV.NODE_H / 2;
      this.zoom = Math.max(this.zoom, 1);
    }
    search(query) {
      const q = query.trim().toLowerCase();
      const text = (f, k) => (Object.hasOwn(f, k) && ["string", "number"].includes(typeof f[k]) ? String(f[k]) : "");
      this.matches = !q ? [] : this.g.nodes.filter((n) => {
        const f = n.fields; // the file's own fields only, and only strings and numbers
        return [n.id, n.label, text(f, "value"), text(f, "op"), text(f, "command"), text(f, "loc")].some((v) => v.toLowerCase().includes(q));
      });
      if (this.matches.length) this.centre(this.matches[0]);
      this.changed();
    }
    select(node) {
      this.selection = node;
      this.changed();
    }
    changed() {
      this.render();
      this.onChange(this);
    }

    render() {
      const started = performance.now();
      this.measure();
      const c = this.canvas, dpr = window.devicePixelRatio || 1, w = this.width, h = this.height;
      if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
        c.width = Math.round(w * dpr);
        c.height = Math.round(h * dpr);
        c.style.height = `${h}px`;
      }
      const g = c.getContext("2d"), z = this.zoom;
      g.setTransform(dpr, 0, 0, dpr, 0, 0);
      g.clearRect(0, 0, w, h);
      const near = new Set(this.selection ? [this.selection, ...this.selection.inEdges.map((e) => e.from), ...this.selection.outEdges.map((e) => e.to)] : []);
      const matched = new Set(this.matches);
      for (const [kind, colour] of EDGE) {
        const p = new Path2D(), heads = new Path2D(), size = Math.max(4, 7 * z);
        for (const e of this.g.edges) {
          if (e.kind !== kind && !(kind === "data" && !EDGE.has(e.kind))) continue;
          const [x0, y0] = this.toScreen(e.from), [x1, y1] = this.toScreen(e.to);
          const ax = x0 + (FV.NODE_W * z) / 2, ay = y0 + FV.NODE_H * z, bx = x1 + (FV.NODE_W * z) / 2, by = y1;
          p.moveTo(ax, ay);
          p.lineTo(bx, by);
          if (z > 0.35 && bx >= 0 && by >= 0 && bx <= w && by <= h) arrowhead(heads, ax, ay, bx, by, size); // at the consumer
        }
        g.strokeStyle = colour;
        g.fillStyle = colour;
        g.setLineDash(kind === "data" ? [] : [4, 3]);
        g.stroke(p);
        g.fill(heads);
      }
      g.setLineDash([]);
      g.font = `${Math.max(8, Math.round(12 * z))}px system-ui, sans-serif`;
      g.textBaseline = "middle";
      // One path per fill colour and per outline weight, each drawn once: 200,000 nodes stay one frame.
      const fills = new Map(), outlines = [new Path2D(), new Path2D(), new Path2D()], labels = [];
      const visible = [], nw = FV.NODE_W * z, nh = FV.NODE_H * z;
      for (const n of this.g.nodes) {
        const [x, y] = this.toScreen(n);
        if (x > w || y > h || x + nw < 0 || y + nh < 0) continue;
        visible.push(n.id);
        const colour = matched.has(n) ? "#ffe066" : FILL.get(n.kind) || "#eee";
        if (!fills.has(colour)) fills.set(colour, new Path2D());
        fills.get(colour).rect(x, y, nw, nh);
        outlines[n === this.selection ? 2 : near.has(n) ? 1 : 0].rect(x, y, nw, nh);
        if (z > 0.35) labels.push([n.label, x, y]);
      }
      for (const [colour, path] of fills) {
        g.fillStyle = colour;
        g.fill(path);
      }
      [["#aaa", 1], ["#555", 1.5], ["#111", 2.5]].forEach(([colour, width], i) => {
        g.strokeStyle = colour;
        g.lineWidth = width;
        g.stroke(outlines[i]);
      });
      g.fillStyle = "#222";
      for (const [label, x, y] of labels) {
        g.save();
        g.beginPath();
        g.rect(x, y, nw, nh);
        g.clip();
        g.fillText(label, x + 6 * z, y + nh / 2);
        g.restore();
      }
      g.lineWidth = 1;
      this.visible = visible;
      this.lastFrameMs = performance.now() - started;
    }
    hit(x, y) {
      const [wx, wy] = this.toWorld(x, y);
      return this.g.nodes.find((n) => wx >= n.x && wx <= n.x + FV.NODE_W && wy >= n.y && wy <= n.y + FV.NODE_H) || null;
    }
    locate(id) {
      const n = this.g.byId.get(id);
      if (!n) return null;
      const r = this.canvas.getBoundingClientRect(), [x, y] = this.toScreen(n);
      return { x: r.left + x + (FV.NODE_W * this.zoom) / 2, y: r.top + y + (FV.NODE_H * this.zoom) / 2 };
    }
    listen() {
      const c = this.canvas, pos = (e) => {
        const r = c.getBoundingClientRect();
        return [e.clientX - r.left, e.clientY - r.top];
      };
      this.handlers = {
        mousedown: (e) => {
          const [x, y] = pos(e);
          this.drag = { x0: x, y0: y, cx: this.cx, cy: this.cy, moved: false };
        },
        mousemove: (e) => {
          const d = this.drag;
          if (!d) return;
          const [x, y] = pos(e);
          d.moved = d.moved || Math.abs(x - d.x0) > 3 || Math.abs(y - d.y0) > 3;
          if (!d.moved) return;
          this.cx = d.cx - (x - d.x0) / this.zoom;
          this.cy = d.cy - (y - d.y0) / this.zoom;
          this.render();
        },
        mouseup: (e) => {
          const d = this.drag;
          this.drag = null;
          if (d && !d.moved) this.select(this.hit(...pos(e)));
          else if (d) this.changed();
        },
        wheel: (e) => {
          e.preventDefault();
          const [x, y] = pos(e), [wx, wy] = this.toWorld(x, y);
          this.zoom = Math.min(4, Math.max(0.05, this.zoom * Math.exp(-e.deltaY * 0.002)));
          this.cx = wx - (x - this.width / 2) / this.zoom;
          this.cy = wy - (y - this.height / 2) / this.zoom;
          this.changed();
        },
      };
      for (const [name, fn] of Object.entries(this.handlers)) c.addEventListener(name, fn, { passive: name !== "wheel" });
    }
    destroy() {
      for (const [name, fn] of Object.entries(this.handlers)) this.canvas.removeEventListener(name, fn);
    }
  }

  FV.GraphView = GraphView;
})();
