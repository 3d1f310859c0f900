// What every chart page shares (charts.js, compare.js): ECharts themed with the page's colour
// variables (Airflow's light or dark theme), numbers to six significant digits, time axes in
// Airflow's timezone and format, and escaping for ECharts' HTML tooltips.
"use strict";

const SIGNIFICANT_DIGITS = 6;
const DAY_MS = 24 * 3600 * 1000;

// ---- theme ------------------------------------------------------------------------------------

// The page's colour variables (Airflow's tokens inside Airflow) as rgba(): they may be oklch()
// or other CSS colours, which ECharts cannot parse; a canvas converts any of them.
const colourProbe = document.createElement("canvas").getContext("2d", { willReadFrequently: true });

function cssColour(variable) {
  const value = getComputedStyle(document.documentElement).getPropertyValue(variable).trim();
  colourProbe.clearRect(0, 0, 1, 1);
  colourProbe.fillStyle = "#808080";
  colourProbe.fillStyle = value || "#808080";
  colourProbe.fillRect(0, 0, 1, 1);
  const [red, green, blue, alpha] = colourProbe.getImageData(0, 0, 1, 1).data;
  return `rgba(${red}, ${green}, ${blue}, ${(alpha / 255).toFixed(3)})`;
}

// Halfway between two rgba() colours.
function mix(one, other) {
  const parts = (colour) => colour.slice(5, -1).split(",").map(Number);
  const [a, b] = [parts(one), parts(other)];
  return `rgba(${a.map((value, index) => (index < 3 ? Math.round((value + b[index]) / 2) : value)).join(", ")})`;
}

function dark() {
  return document.documentElement.dataset.theme === "dark";
}

// ECharts' classic palette, and lighter versions of it that read on a dark background.
const PALETTES = {
  light: ["#5470c6", "#91cc75", "#fac858", "#ee6666", "#73c0de", "#3ba272"],
  dark: ["#7f9cf5", "#a5d98d", "#fcd664", "#ff8a8a", "#8fd3ec", "#5ec48f"],
};

function colours() {
  return {
    fg: cssColour("--fg"), muted: cssColour("--fg-muted"), panel: cssColour("--bg-panel"),
    subtle: cssColour("--bg-subtle"), border: cssColour("--border"),
    strong: cssColour("--border-emphasized"), accent: cssColour("--accent"),
    font: getComputedStyle(document.body).fontFamily,
    palette: PALETTES[dark() ? "dark" : "light"],
  };
}

// An ECharts theme of the page's colours: text, axes, grid lines, tooltip, legend, toolbox
// and the zoom slider.
function chartTheme() {
  const c = colours();
  const axis = {
    axisLine: { lineStyle: { color: c.strong } }, axisTick: { lineStyle: { color: c.strong } },
    axisLabel: { color: c.muted }, splitLine: { lineStyle: { color: c.border } },
    nameTextStyle: { color: c.muted },
  };
  return {
    darkMode: dark(), color: c.palette, backgroundColor: "transparent",
    textStyle: { color: c.fg, fontFamily: c.font },
    legend: { textStyle: { color: c.fg }, inactiveColor: mix(c.muted, c.strong), pageTextStyle: { color: c.muted } },
    tooltip: { backgroundColor: c.panel, borderColor: c.strong, textStyle: { color: c.fg } },
    axisPointer: { lineStyle: { color: c.strong }, label: { backgroundColor: c.muted, color: c.panel } },
    toolbox: { iconStyle: { borderColor: c.muted }, emphasis: { iconStyle: { borderColor: c.accent } } },
    dataZoom: {
      borderColor: c.border, textStyle: { color: c.muted }, fillerColor: "rgba(128, 128, 128, 0.15)",
      handleStyle: { color: c.panel, borderColor: c.strong }, moveHandleStyle: { color: c.strong },
      dataBackground: { lineStyle: { color: c.strong }, areaStyle: { color: c.border } },
      selectedDataBackground: { lineStyle: { color: c.muted }, areaStyle: { color: c.strong } },
      brushStyle: { color: "rgba(128, 128, 128, 0.2)" },
    },
    valueAxis: axis, logAxis: axis, timeAxis: axis,
    line: { symbol: "circle" },
  };
}

// ---- numbers, times and text ------------------------------------------------------------------

function significant(value) {
  if (!Number.isFinite(value)) return "—";
  return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(SIGNIFICANT_DIGITS)));
}

// A time axis's labels in Airflow's timezone and format (ECharts would use the browser's):
// the time of day, with the date when the axis spans more than a day.
function timeLabels(spanMs) {
  return { formatter: (value) => {
    const text = formatDateTime(new Date(value));
    return spanMs > DAY_MS ? text.slice(5, 16) : text.slice(11);
  }, hideOverlap: true };
}

// ECharts' tooltip is HTML: a line's name (catalog text) goes into it escaped.
const HTML_ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (character) => HTML_ESCAPES[character]);
}
