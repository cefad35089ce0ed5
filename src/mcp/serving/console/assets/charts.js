// A line chart on a canvas: the last `capacity` values of one or more series, scaled to the
// largest value shown. The canvas's data attributes carry the latest and largest values, so a
// test (or a screen reader's user, through the figure caption) reads what the lines show.
"use strict";

const PALETTE = ["#0b5cad", "#a4001d", "#1a6b2f", "#7a4a00", "#5b2a86"];

class LineChart {
  constructor(canvas, capacity) {
    this.canvas = canvas;
    this.capacity = capacity || 120;
    this.series = new Map(); // name -> values
    this.numFrames = 0;
  }

  push(values) { // values: {series name: number or null}
    this.numFrames += 1;
    for (const name of new Set([...this.series.keys(), ...Object.keys(values)])) {
      const list = this.series.get(name) || new Array(this.numFrames - 1).fill(null);
      list.push(values[name] === undefined ? null : values[name]);
      while (list.length > this.capacity) list.shift();
      this.series.set(name, list);
    }
    this.draw();
  }

  max() {
    let top = 0;
    for (const list of this.series.values()) for (const v of list) if (v !== null && v > top) top = v;
    return top;
  }

  draw() {
    const ctx = this.canvas.getContext("2d");
    const { width, height } = this.canvas;
    const pad = 28;
    const top = this.max() || 1;
    ctx.clearRect(0, 0, width, height);
    ctx.strokeStyle = "#c9d1d9";
    ctx.strokeRect(pad, 4, width - pad - 4, height - pad);
    ctx.fillStyle = "#4a5560";
    ctx.font = "11px sans-serif";
    ctx.fillText(top.toPrecision(3), 2, 14);
    ctx.fillText("0", 2, height - pad);
    let index = 0;
    for (const [name, list] of this.series) {
      ctx.strokeStyle = PALETTE[index % PALETTE.length];
      ctx.lineWidth = 2;
      ctx.beginPath();
      let started = false;
      const offset = this.capacity - list.length; // the newest value sits at the right edge
      list.forEach((v, i) => {
        if (v === null) { started = false; return; }
        const x = pad + ((offset + i) / Math.max(this.capacity - 1, 1)) * (width - pad - 4);
        const y = 4 + (1 - v / top) * (height - pad - 4);
        if (started) ctx.lineTo(x, y); else ctx.moveTo(x, y);
        started = true;
      });
      ctx.stroke();
      ctx.fillStyle = ctx.strokeStyle;
      ctx.fillText(name, pad + 6, height - 10 - 12 * index);
      index += 1;
    }
    const latest = [...this.series.values()].map((l) => l[l.length - 1]).filter((v) => v !== null);
    this.canvas.dataset.frames = String(this.numFrames);
    this.canvas.dataset.max = String(top === 1 && !this.max() ? 0 : top);
    this.canvas.dataset.latest = String(latest.length ? Math.max(...latest) : 0);
  }
}
