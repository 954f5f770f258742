/* The code explorer of `allennlp bits explore` (data written by bitcode_allennlp/bits/explore.py).
 *
 * Views, each a URL fragment: #corpus?page=&word=&label=&prefix=&near=&radius=, #word/WORD?code=, #bits?view=&bit=&label=,
 * #code/HEX, #diff?a=&b= (corpus sentences) or ?ta=&tb= (typed, with --serve), #trees?s=, #type?text= (with --serve).
 * Data shards are loaded on demand with <script> tags (file:// allows no fetch): data/meta.js, data/sentences/N.js,
 * data/entries.js. No third-party code. Hamming neighbours: the top k entries by (distance, entry index), the order
 * of `allennlp bits search`; a word the corpus does not have (a typed sentence's word) shows the nearest corpus words to
 * its code. Labels are gold labels (the codes file's tags); a typed sentence's (--serve) are predicted by the model.
 * The diff aligns only what aligns (`align`): equal words, and in two variants of one sentence one word replaced
 * between two equal words; any other word is marked as only in A or only in B, never paired with an unrelated word.
 * Long sentences: the data keeps every word (filters, words, codes and neighbours scan them all); only the layout is
 * bounded, so that a sentence of 20,000 words opens as fast as any: a view lays out at most MAX_SENTENCE_WORDS words
 * of one sentence (the first ones, or with a filter its hits and their neighbours first, then "… N more words"), the
 * corpus diff compares the first MAX_SENTENCE_WORDS words of each sentence, and the tree view draws trees of at most
 * MAX_TREE_WORDS words (a longer one: a note and its words). */
"use strict";

window.BitcodeData = (function () {
  const values = {}, waiting = {};
  return {
    put(name, value) {
      values[name] = value;
      (waiting[name] || []).forEach((w) => w.resolve(value));
      delete waiting[name];
    },
    load(name) {
      if (name in values) return Promise.resolve(values[name]);
      return new Promise((resolve, reject) => {
        const first = !(name in waiting);
        (waiting[name] = waiting[name] || []).push({ resolve, reject });
        if (!first) return;
        const script = document.createElement("script");
        script.src = "data/" + name + ".js";
        script.onerror = () => {
          (waiting[name] || []).forEach((w) => w.reject(new Error("cannot load data/" + name + ".js")));
          delete waiting[name];
        };
        document.head.appendChild(script);
      });
    },
  };
})();

const PAGE = 20; // sentences per corpus page
const K_NEIGHBOURS = 10;
const MAX_SENTENCE_WORDS = 500; // words of one sentence laid out at once (corpus, diff and typed views)
const MAX_TREE_WORDS = 500; // the tree view draws trees of at most this many words
let META = null, ENTRIES = null, SERVE = null;
let ROUTES = 0, RENDERS = 0; // the latest route asked for; renders finished (main's data-ready, for tests)

// ------------------------------------------------------------------------------------------ small helpers
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.appendChild(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
  }
  return node;
}
const fmt = (n) => Number(n).toLocaleString("en-US");
const counted = (n, noun) => fmt(n) + " " + (n === 1 ? noun : noun + "s");  // "1 word", "2 words"
const pct = (x) => (100 * x).toFixed(0) + "%";

function popcount(x) {
  x = x - ((x >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}
function hexOf(hi, lo) {
  const full = hi.toString(16).padStart(8, "0") + lo.toString(16).padStart(8, "0");
  return full.slice(16 - META.hex_digits);
}
function parseHex(text) { // [high 32 bits, low 32 bits] of a K-bit hex code, or null
  const hex = String(text || "").trim().toLowerCase();
  if (!new RegExp("^[0-9a-f]{" + META.hex_digits + "}$").test(hex)) return null;
  const spare = 4 * META.hex_digits - META.num_bits; // unused high bits of the first digit must be 0
  if (parseInt(hex[0], 16) >= 2 ** (4 - spare)) return null;
  const full = hex.padStart(16, "0");
  return [parseInt(full.slice(0, 8), 16) >>> 0, parseInt(full.slice(8), 16) >>> 0];
}
function bitsOf(hex) { // head 0 first
  let binary = "";
  for (const digit of hex) binary += parseInt(digit, 16).toString(2).padStart(4, "0");
  return binary.slice(binary.length - META.num_bits).split("").map(Number);
}
const STRIPS = new Map(); // hex code -> the picture of its bits (one per distinct code, drawn once)
function strip(hex) {
  if (!STRIPS.has(hex)) {
    const bits = bitsOf(hex), cell = 4, gap = 2, spare = 4 * META.hex_digits - META.num_bits;
    const canvas = document.createElement("canvas");
    canvas.width = bits.length * cell + (META.hex_digits - 1) * gap;
    canvas.height = 9;
    const context = canvas.getContext("2d");
    bits.forEach((bit, i) => { // a gap between hex digits
      context.fillStyle = bit ? "#1f2937" : "#d1d5db";
      context.fillRect(i * cell + Math.floor((i + spare) / 4) * gap, 0, cell - 1, 9);
    });
    STRIPS.set(hex, canvas.toDataURL());
  }
  return el("img", { class: "strip", src: STRIPS.get(hex), alt: bitsOf(hex).join(""), title: bitsOf(hex).join("") });
}
function bitCells(bits, marks, markClass) {
  return el("span", { class: "bitcells" }, bits.map((b, i) => el("span", { class: marks && marks.has(i) ? markClass : null, "data-bit": i }, String(b)))
    .flatMap((span, i) => (i > 0 && i % 4 === 0 ? [" ", span] : [span])));
}
function labelColour(view, label) {
  const names = META.views[view] ? META.views[view].labels : [];
  if (label === "O" || label === undefined) return "#d1d5db";
  const i = names.indexOf(label);
  return "hsl(" + ((i * 137.5) % 360).toFixed(0) + ", 65%, 55%)";
}
function defaultView() { return "type" in META.views ? "type" : Object.keys(META.views)[0]; }

function parseRoute() {
  const raw = location.hash.replace(/^#/, "") || "corpus";
  const [path, query] = raw.split("?");
  const parts = path.split("/");
  return { view: parts[0], arg: parts.length > 1 ? decodeURIComponent(parts.slice(1).join("/")) : null, q: new URLSearchParams(query || "") };
}
function link(view, arg, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null && v !== "") q.set(k, v);
  return "#" + view + (arg !== null && arg !== undefined ? "/" + encodeURIComponent(arg) : "") + (q.toString() ? "?" + q : "");
}

// ------------------------------------------------------------------------------------------ data
function decode(base64, Type) {
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  return new Type(bytes.buffer);
}
async function entries() {
  if (ENTRIES) return ENTRIES;
  const raw = await BitcodeData.load("entries");
  const e = { hi: decode(raw.hi, Uint32Array), lo: decode(raw.lo, Uint32Array), word: decode(raw.word, Uint32Array),
    starts: decode(raw.starts, Uint32Array), vocabulary: raw.vocabulary, labels: {} };
  for (const [view, ids] of Object.entries(raw.labels)) e.labels[view] = decode(ids, Uint16Array);
  e.wordId = new Map(raw.vocabulary.map((w, i) => [w, i]));
  e.n = e.hi.length;
  ENTRIES = e;
  return e;
}
function sentenceOf(e, index) { // binary search in the sentence starts
  let lo = 0, hi = e.starts.length - 2;
  while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (e.starts[mid] <= index) lo = mid; else hi = mid - 1; }
  return lo;
}
async function sentence(id) {
  const shard = Math.floor(id / META.shard_sentences);
  const rows = await BitcodeData.load("sentences/" + shard);
  return rows[id - shard * META.shard_sentences];
}
function labelsOf(e, index) {
  const out = {};
  for (const [view, ids] of Object.entries(e.labels)) out[view] = META.views[view].labels[ids[index]];
  return out;
}
function byDistance(e, hi, lo) { // entry indices by Hamming distance to the code: [d] -> ascending entries
  const buckets = Array.from({ length: META.num_bits + 1 }, () => []);
  for (let i = 0; i < e.n; i++) buckets[popcount((e.hi[i] ^ hi) >>> 0) + popcount((e.lo[i] ^ lo) >>> 0)].push(i);
  return buckets;
}
function neighbours(e, hi, lo, k) { // top k [entry, distance] by (distance, entry index), as `allennlp bits search`
  const buckets = byDistance(e, hi, lo), hits = [];
  for (let d = 0; d <= META.num_bits && hits.length < k; d++)
    for (const i of buckets[d]) { if (hits.length >= k) break; hits.push([i, d]); }
  return hits;
}
function nearestWords(e, hi, lo, k) { // the k nearest distinct words: each word's first entry in (distance, entry) order
  const buckets = byDistance(e, hi, lo), seen = new Set(), hits = [];
  for (let d = 0; d <= META.num_bits && hits.length < k; d++)
    for (const i of buckets[d]) {
      if (hits.length >= k) break;
      if (!seen.has(e.word[i])) { seen.add(e.word[i]); hits.push([i, d]); }
    }
  return hits;
}
async function context(e, index, width) {
  const sid = sentenceOf(e, index), s = await sentence(sid), pos = index - e.starts[sid];
  const from = Math.max(0, pos - width), to = Math.min(s.w.length, pos + width + 1);
  return el("span", { class: "ctx" }, from > 0 ? "… " : "", s.w.slice(from, pos).join(" ") + " ", el("b", {}, s.w[pos]),
    " " + s.w.slice(pos + 1, to).join(" "), to < s.w.length ? " …" : "");
}

// ------------------------------------------------------------------------------------------ pieces
function token(word, hex, tag, sid, pos, hit, predicted) { // predicted: the tag is the model's, not gold
  const view = defaultView(), label = tag;
  const colourLabel = view === "type" && tag && tag !== "O" ? tag.slice(2) : tag;
  return el("a", { class: "tok" + (hit ? " hit" : ""), href: link("word", word, { code: hex }), "data-code": hex,
    "data-word": word, "data-sid": sid, "data-pos": pos, style: "border-bottom-color:" + labelColour(view, colourLabel) },
  el("span", { class: "w" }, word),
  label !== undefined ? el("span", { class: "t", title: (predicted ? "predicted" : "gold") + " label" }, label) : null,
  el("span", { class: "code" }, hex), strip(hex));
}
function shownPositions(length, hits) { // the positions of a sentence to lay out, ascending: all, or MAX_SENTENCE_WORDS
  if (length <= MAX_SENTENCE_WORDS) return Array.from({ length }, (_, i) => i);
  const keep = new Set(); // with a filter, its hits (and 3 words each side) first, then the first words
  for (const hit of hits ? Array.from(hits).sort((a, b) => a - b) : []) {
    for (let i = Math.max(0, hit - 3); i <= Math.min(length - 1, hit + 3) && keep.size < MAX_SENTENCE_WORDS; i++) keep.add(i);
    if (keep.size >= MAX_SENTENCE_WORDS) break;
  }
  for (let i = 0; keep.size < MAX_SENTENCE_WORDS; i++) keep.add(i);
  return Array.from(keep).sort((a, b) => a - b);
}
function sentenceBox(s, sid, hits) {
  const shown = shownPositions(s.w.length, hits), tokens = [];
  shown.forEach((i, r) => {
    if (i !== (r ? shown[r - 1] + 1 : 0)) tokens.push(el("span", { class: "gap" }, "…"));
    tokens.push(token(s.w[i], s.c[i], s.t ? s.t[i] : undefined, sid, i, hits && hits.has(i), s.predicted));
  });
  const hidden = s.w.length - shown.length;
  if (hidden) {
    const laid = new Set(shown), hiddenHits = hits ? Array.from(hits).filter((i) => !laid.has(i)).length : 0;
    tokens.push(el("span", { class: "more", "data-hidden": hidden }, (shown[shown.length - 1] < s.w.length - 1 ? "… " : "") +
      fmt(hidden) + " more word" + (hidden > 1 ? "s" : "") + (hiddenHits ? " (" + fmt(hiddenHits) + " of them matching)" : "") +
      ": a sentence of " + fmt(s.w.length) + " words, the page lays out " + fmt(MAX_SENTENCE_WORDS) +
      " (filters, words, codes and neighbours use them all)"));
  }
  return el("div", { class: "sentence", "data-sid": sid, "data-words": s.w.length },
    el("span", { class: "sid" }, "sentence " + sid + (s.source ? " · " + s.source : "") + (s.tree ? " · " : ""),
      s.tree ? el("a", { href: link("trees", null, { s: sid }) }, "tree") : null),
    tokens);
}
function labelNote(predicted) { // what the labels under the words are
  if (predicted) return el("p", { class: "note", id: "label-note" }, "Under each word: the label the model predicts (predicted, not gold), and its colour.");
  if (META.task === "codes") return null;
  return el("p", { class: "note", id: "label-note" }, META.task === "parser"
    ? "Gold labels: the codes file's gold trees (their preterminal tags are the label views)."
    : "Under each word: its gold label (the codes file's tags), and its colour.");
}
function pager(page, pages, make) {
  return el("div", { class: "pager" },
    page > 1 ? el("a", { href: make(page - 1), class: "prev" }, "← previous") : el("span", {}, ""),
    el("span", {}, "page " + page + " of " + fmt(pages)),
    page < pages ? el("a", { href: make(page + 1), class: "next" }, "next →") : el("span", {}, ""));
}
function hitsTable(e, hits, contexts) {
  const views = Object.keys(e.labels);
  return el("table", { class: "hits" }, el("tr", {}, el("th", { class: "num" }, "rank"), el("th", { class: "num" }, "distance"),
    el("th", {}, "code"), el("th", {}, "word"), views.map((v) => el("th", {}, "gold " + v)), el("th", {}, "context")),
  hits.map(([i, d], r) => el("tr", { "data-entry": i },
    el("td", { class: "num" }, r + 1), el("td", { class: "num" }, d),
    el("td", { class: "code" }, el("a", { href: link("code", hexOf(e.hi[i], e.lo[i])) }, hexOf(e.hi[i], e.lo[i]))),
    el("td", { class: "word" }, el("a", { href: link("word", e.vocabulary[e.word[i]]) }, e.vocabulary[e.word[i]])),
    views.map((v) => el("td", {}, META.views[v].labels[e.labels[v][i]])), el("td", {}, contexts[r]))));
}

// ------------------------------------------------------------------------------------------ views
async function corpusView(q) {
  const page = Math.max(1, parseInt(q.get("page") || "1", 10) || 1);
  const filters = { word: q.get("word") || "", label: q.get("label") || "", prefix: (q.get("prefix") || "").toLowerCase(),
    near: q.get("near") || "", radius: q.get("radius") || "2" };
  const labelOptions = Object.entries(META.views).flatMap(([view, v]) => v.labels.map((l) => view + ":" + l));
  const form = el("form", { class: "filters", onsubmit: (event) => {
    event.preventDefault();
    const data = Object.fromEntries(new FormData(event.target).entries());
    location.hash = link("corpus", null, data);
  } },
  el("label", {}, "word", el("input", { name: "word", value: filters.word, size: 12 })),
  labelOptions.length ? el("label", {}, "gold label", el("select", { name: "label" }, el("option", { value: "" }, "any"),
    labelOptions.map((o) => el("option", { value: o, selected: o === filters.label }, o)))) : null,
  el("label", {}, "code prefix (hex)", el("input", { name: "prefix", value: filters.prefix, size: 8 })),
  el("label", {}, "near code", el("input", { name: "near", value: filters.near, size: 10 })),
  el("label", {}, "radius", el("input", { name: "radius", value: filters.radius, size: 3, type: "number", min: 0 })),
  el("button", { type: "submit" }, "filter"), el("a", { href: "#corpus" }, "clear"));
  const out = [form, labelNote()];
  const active = filters.word || filters.label || filters.prefix || filters.near;
  let ids, marks = null, matches = null;
  if (!active) {
    ids = Array.from({ length: META.sentences }, (_, i) => i);
  } else {
    const e = await entries();
    let test = () => true;
    const tests = [];
    if (filters.word) { const w = e.wordId.get(filters.word); tests.push((i) => e.word[i] === w); }
    if (filters.label) {
      const [view, label] = [filters.label.split(":")[0], filters.label.split(":").slice(1).join(":")];
      const id = META.views[view] ? META.views[view].labels.indexOf(label) : -1;
      tests.push((i) => id >= 0 && e.labels[view][i] === id);
    }
    if (filters.prefix) tests.push((i) => hexOf(e.hi[i], e.lo[i]).startsWith(filters.prefix));
    if (filters.near) {
      const code = parseHex(filters.near), r = parseInt(filters.radius, 10) || 0;
      if (!code) out.push(el("p", { class: "error" }, "near code: not a " + META.num_bits + "-bit hex code: " + filters.near));
      tests.push((i) => code && popcount((e.hi[i] ^ code[0]) >>> 0) + popcount((e.lo[i] ^ code[1]) >>> 0) <= r);
    }
    test = (i) => tests.every((t) => t(i));
    marks = new Map();
    matches = 0;
    for (let i = 0; i < e.n; i++) if (test(i)) {
      matches++;
      const sid = sentenceOf(e, i);
      if (!marks.has(sid)) marks.set(sid, new Set());
      marks.get(sid).add(i - e.starts[sid]);
    }
    ids = Array.from(marks.keys());
    out.push(el("p", { class: "note", id: "matches" }, counted(matches, "word") + " in " + counted(ids.length, "sentence") + " match"));
  }
  const pages = Math.max(1, Math.ceil(ids.length / PAGE));
  const shown = ids.slice((page - 1) * PAGE, page * PAGE);
  const make = (p) => link("corpus", null, Object.assign({}, active ? filters : {}, { page: p }));
  out.push(pager(Math.min(page, pages), pages, make));
  const boxes = await Promise.all(shown.map(async (sid) => sentenceBox(await sentence(sid), sid, marks ? marks.get(sid) : null)));
  out.push(...boxes, pager(Math.min(page, pages), pages, make));
  return out;
}

async function wordView(word, q) {
  const e = await entries();
  const id = e.wordId.get(word);
  if (id === undefined) return unknownWordView(e, word, q.get("code"));
  const occurrences = [];
  for (let i = 0; i < e.n; i++) if (e.word[i] === id) occurrences.push(i);
  const counts = new Map();
  for (const i of occurrences) { const h = hexOf(e.hi[i], e.lo[i]); counts.set(h, (counts.get(h) || 0) + 1); }
  const distinct = Array.from(counts.entries()).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const query = parseHex(q.get("code")) ? q.get("code").toLowerCase() : distinct[0][0];
  const vary = new Set();
  const first = bitsOf(distinct[0][0]);
  for (const [h] of distinct) bitsOf(h).forEach((b, i) => { if (b !== first[i]) vary.add(i); });
  const [hi, lo] = parseHex(query);
  const hits = neighbours(e, hi, lo, K_NEIGHBOURS);
  const shownOccurrences = occurrences.slice(0, 100);
  const occurrenceContexts = await Promise.all(shownOccurrences.map((i) => context(e, i, 6)));
  const hitContexts = await Promise.all(hits.map(([i]) => context(e, i, 6)));
  return [
    el("h2", {}, "word ", el("q", {}, word)),
    el("p", { id: "word-summary" }, fmt(occurrences.length) + " occurrences, " + distinct.length + " distinct codes; " +
      vary.size + " of " + META.num_bits + " bits vary across them (marked)"),
    el("div", { class: "cols" },
      el("div", {}, el("h3", {}, "its codes"), el("table", { class: "word-codes" }, el("tr", {}, el("th", {}, "code"), el("th", {}, "bits (varying ones marked)"), el("th", { class: "num" }, "occurrences")),
        distinct.map(([h, c]) => el("tr", {}, el("td", { class: "code" }, el("a", { href: link("code", h) }, h)),
          el("td", {}, bitCells(bitsOf(h), vary, "vary")), el("td", { class: "num" }, c))))),
      el("div", {}, el("h3", {}, "occurrences" + (occurrences.length > 100 ? " (first 100)" : "")),
        el("table", { class: "occurrences" }, el("tr", {}, el("th", {}, "code"), el("th", {}, "gold labels"), el("th", {}, "context")),
          shownOccurrences.map((i, r) => el("tr", {},
          el("td", { class: "code" }, el("a", { href: link("word", word, { code: hexOf(e.hi[i], e.lo[i]) }) }, hexOf(e.hi[i], e.lo[i]))),
          el("td", {}, Object.values(labelsOf(e, i)).join(" ")), el("td", {}, occurrenceContexts[r])))))),
    el("h3", { id: "neighbours-title" }, "nearest " + K_NEIGHBOURS + " words to code " + query + " (Hamming distance; ties: corpus order)"),
    el("div", { id: "neighbours", "data-code": query }, hitsTable(e, hits, hitContexts)),
  ];
}
async function nearestTables(e, hex) { // a code no corpus word carries: the nearest distinct words, then the nearest entries
  const [hi, lo] = parseHex(hex), words = nearestWords(e, hi, lo, K_NEIGHBOURS), hits = neighbours(e, hi, lo, K_NEIGHBOURS);
  const wordContexts = await Promise.all(words.map(([i]) => context(e, i, 6)));
  const hitContexts = await Promise.all(hits.map(([i]) => context(e, i, 6)));
  return [
    el("h3", { id: "nearest-words-title" }, "the " + K_NEIGHBOURS + " corpus words nearest to code " + hex +
      " (Hamming distance; each word once, at its nearest occurrence; ties: corpus order)"),
    el("div", { id: "nearest-words", "data-code": hex }, hitsTable(e, words, wordContexts)),
    el("h3", { id: "neighbours-title" }, "nearest " + K_NEIGHBOURS + " entries to code " + hex + " (Hamming distance; ties: corpus order, as `allennlp bits search`)"),
    el("div", { id: "neighbours", "data-code": hex }, hitsTable(e, hits, hitContexts)),
  ];
}
async function unknownWordView(e, word, code) { // a word not in the corpus (a typed one): the nearest words to its code
  const head = el("h2", {}, "word ", el("q", {}, word)), missing = JSON.stringify(word) + " does not occur in this corpus";
  if (!parseHex(code)) {
    return [head, el("p", { class: "error", id: "word-summary" }, missing + (code ? "; " + JSON.stringify(code) + " is not a " + META.num_bits +
      "-bit hex code" : "") + ". With its code (#word/…?code=HEX, as a typed sentence's words link) the page shows the corpus words nearest to it.")];
  }
  const hex = code.trim().toLowerCase();
  return [head, el("p", { class: "note", id: "word-summary" }, missing + "; its code ", el("a", { href: link("code", hex) }, hex),
    " (from the link) against the corpus codes:"), ...await nearestTables(e, hex)];
}

async function codeView(hex) {
  const code = parseHex(hex);
  if (!code) return [el("p", { class: "error" }, "not a " + META.num_bits + "-bit hex code: " + hex)];
  const e = await entries();
  const found = [];
  for (let i = 0; i < e.n; i++) if (e.hi[i] === code[0] && e.lo[i] === code[1]) found.push(i);
  const words = new Map();
  for (const i of found) { const w = e.vocabulary[e.word[i]]; words.set(w, (words.get(w) || 0) + 1); }
  const purity = Object.keys(e.labels).map((view) => {
    const counts = new Map();
    for (const i of found) { const l = META.views[view].labels[e.labels[view][i]]; counts.set(l, (counts.get(l) || 0) + 1); }
    const sorted = Array.from(counts.entries()).sort((a, b) => b[1] - a[1]);
    return el("tr", {}, el("td", {}, view), el("td", { class: "num purity" }, found.length ? pct(sorted[0][1] / found.length) : "–"),
      el("td", {}, sorted.map(([l, c]) => l + " " + c).join(", ")));
  });
  const shown = found.slice(0, 50);
  const contexts = await Promise.all(shown.map((i) => context(e, i, 6)));
  if (!found.length) {
    return [el("h2", {}, "code ", el("span", { class: "code" }, hex), " ", bitCells(bitsOf(hex.toLowerCase()))),
      el("p", { id: "code-summary" }, "0 words carry it · ", el("a", { href: link("corpus", null, { near: hex, radius: 1 }) }, "words within 1 bit")),
      ...await nearestTables(e, hex.toLowerCase())];
  }
  return [
    el("h2", {}, "code ", el("span", { class: "code" }, hex), " ", bitCells(bitsOf(hex.toLowerCase()))),
    el("p", { id: "code-summary" }, fmt(found.length) + " words carry it, " + words.size + " distinct · ",
      el("a", { href: link("corpus", null, { near: hex, radius: 1 }) }, "words within 1 bit")),
    el("div", { class: "cols" },
      el("div", {}, el("h3", {}, "gold label purity"), el("table", {}, el("tr", {}, el("th", {}, "view"), el("th", {}, "purity"), el("th", {}, "gold labels")), purity)),
      el("div", {}, el("h3", {}, "words"), el("table", { class: "code-words" }, Array.from(words.entries()).sort((a, b) => b[1] - a[1]).slice(0, 50)
        .map(([w, c]) => el("tr", {}, el("td", {}, el("a", { href: link("word", w, { code: hex }) }, w)), el("td", { class: "num" }, c)))))),
    el("h3", {}, "occurrences" + (found.length > 50 ? " (first 50)" : "")),
    el("table", {}, el("tr", {}, el("th", {}, "word"), el("th", {}, "gold labels"), el("th", {}, "context")),
      shown.map((i, r) => el("tr", {}, el("td", {}, e.vocabulary[e.word[i]]), el("td", {}, Object.values(labelsOf(e, i)).join(" ")), el("td", {}, contexts[r])))),
  ];
}

function fewWords() { return META.few_words || 30; } // a label row of fewer words is drawn faded
function heatLegend(view) {
  const few = fewWords(), shades = [0, 0.25, 0.5, 0.75, 1];
  return el("div", { class: "legend", id: "heat-legend" },
    el("span", { class: "legend-title" }, "colour and number of a cell: P(bit i = 1 | gold label), the share of the label's words (gold " + view + ") with bit i = 1, in %:"),
    el("span", { class: "scale" }, shades.map((p) => el("span", { class: "swatch", style: "background-color: rgba(37, 99, 235, " + p + "); color: " + (p > 0.55 ? "#fff" : "#111") }, pct(p)))),
    el("span", {}, "· words: the label's words in the corpus (the bar: against the largest label)"),
    el("span", {}, "· ", el("span", { class: "swatch few" }, "50%"), " faded and hatched: a label of fewer than " + few + " words, whose shares rest on few words (one word moves them by over " + (100 / few).toFixed(1) + " points)"));
}
function heatTable(v, view, bit, label) {
  const order = v.labels.map((l, i) => i).sort((a, b) => v.counts[b] - v.counts[a]), largest = Math.max(1, ...v.counts);
  return el("table", { class: "heat", id: "heatmap" },
    el("tr", {}, el("th", {}, "gold " + view), el("th", { class: "num" }, "words"),
      Array.from({ length: META.num_bits }, (_, b) => el("th", {}, el("a", { href: link("bits", null, { view, bit: b }) }, String(b))))),
    order.map((li) => { const few = v.counts[li] < fewWords(); return el("tr", { "data-label": v.labels[li], "data-count": v.counts[li], class: few ? "few" : null },
      el("th", { title: v.labels[li] + ": " + fmt(v.counts[li]) + " words" }, v.labels[li]),
      el("td", { class: "num count" }, fmt(v.counts[li]), el("span", { class: "bar", style: "width: " + (100 * v.counts[li] / largest).toFixed(1) + "%" })),
      v.ones[li].map((ones, b) => {
        const p = v.counts[li] ? ones / v.counts[li] : 0;
        return el("td", { class: b === bit && v.labels[li] === label ? "selected" : null, "data-bit": b,
          title: fmt(ones) + " of the " + fmt(v.counts[li]) + " words with gold label " + v.labels[li] + " have bit " + b + " = 1",
          style: "background-color: rgba(37, 99, 235, " + p.toFixed(3) + "); color: " + (p > 0.55 && !few ? "#fff" : "#111"),
          onclick: () => { location.hash = link("bits", null, { view, bit: b, label: v.labels[li] }); } }, (100 * p).toFixed(0));
      })); }));
}
async function bitsView(q) {
  const views = Object.keys(META.views);
  const bit = q.get("bit") === null ? null : parseInt(q.get("bit"), 10);
  const hasBit = bit !== null && bit >= 0 && bit < META.num_bits;
  if (!views.length) {
    const out = [el("p", { class: "note" }, "This codes corpus has no gold labels: no bit-by-label view. Bits set: ",
      META.bit_ones.flatMap((c, i) => [i ? ", " : "", el("a", { href: link("bits", null, { bit: i }) }, String(i)), ": " + pct(c / META.words)]))];
    return hasBit ? out.concat(await bitSection(bit, null, null, null)) : out;
  }
  const view = views.includes(q.get("view")) ? q.get("view") : defaultView();
  const label = q.get("label");
  const out = [
    el("h2", {}, "bits by gold label: P(bit i = 1 | gold label)"),
    el("p", {}, "gold label view: ", views.map((w) => w === view ? el("b", {}, w + " ") : el("a", { href: link("bits", null, { view: w }) }, w + " ")),
      " · click a cell for the words of that label with that bit set; a bit number for the bit's page"),
    heatLegend(view), heatTable(META.views[view], view, bit, label),
  ];
  return hasBit ? out.concat(await bitSection(bit, view, META.views[view], label)) : out;
}
async function bitSection(bit, view, v, label) { // a bit's page: its gold labels when 0 and 1 (v: the view's counts, or null), its words
  const e = await entries();
  const labelId = label === null || !v ? -1 : v.labels.indexOf(label);
  const hiBit = bit < META.num_bits - 32 ? 1 << (META.num_bits - 33 - bit) : 0;
  const loBit = bit >= META.num_bits - 32 ? (1 << (META.num_bits - 1 - bit)) >>> 0 : 0;
  const isSet = (i) => (hiBit ? (e.hi[i] & hiBit) !== 0 : (e.lo[i] & loBit) !== 0);
  const total = new Map(), set = new Map(), cell = new Map();
  for (let i = 0; i < e.n; i++) {
    const w = e.word[i];
    total.set(w, (total.get(w) || 0) + 1);
    if (isSet(i)) {
      set.set(w, (set.get(w) || 0) + 1);
      if (labelId >= 0 && e.labels[view][i] === labelId) cell.set(w, (cell.get(w) || 0) + 1);
    }
  }
  const top = (m, n) => Array.from(m.entries()).sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, n);
  const order = v ? v.labels.map((l, i) => i).sort((a, b) => v.counts[b] - v.counts[a]) : [];
  const labelTable = !v ? null : el("div", {}, el("h4", {}, "gold labels when it is 0 and 1"), el("table", { id: "bit-labels" },
    el("tr", {}, el("th", {}, "gold " + view), el("th", { class: "num" }, "bit = 0"), el("th", { class: "num" }, "bit = 1")),
    order.map((li) => el("tr", { "data-label": v.labels[li] }, el("td", {}, v.labels[li]), el("td", { class: "num zero" }, fmt(v.counts[li] - v.ones[li][bit])), el("td", { class: "num one" }, fmt(v.ones[li][bit]))))));
  const wordTable = el("table", { id: "bit-words" }, el("tr", {}, el("th", {}, "word"), el("th", { class: "num" }, "set"), el("th", { class: "num" }, "of its occurrences")),
    top(set, 20).map(([w, c]) => el("tr", {}, el("td", {}, el("a", { href: link("word", e.vocabulary[w]) }, e.vocabulary[w])), el("td", { class: "num" }, c), el("td", { class: "num" }, pct(c / total.get(w))))));
  const cellTable = labelId < 0 ? null : el("div", {}, el("h4", { id: "cell-title" }, "words with gold label " + label + " and bit " + bit + " = 1"),
    el("table", { id: "cell-words" }, top(cell, 30).map(([w, c]) => el("tr", {}, el("td", {}, el("a", { href: link("word", e.vocabulary[w]) }, e.vocabulary[w])), el("td", { class: "num" }, c)))));
  return [el("h3", { id: "bit-title" }, "bit " + bit),
    el("div", { class: "cols" }, labelTable, el("div", {}, el("h4", {}, "words that most often set it"), wordTable), cellTable)];
}

// difflib.SequenceMatcher's matching blocks (no junk) on the word strings: the anchors of the diff's alignment
function matchingBlocks(a, b) {
  const b2j = new Map();
  b.forEach((w, j) => { if (!b2j.has(w)) b2j.set(w, []); b2j.get(w).push(j); });
  const longest = (alo, ahi, blo, bhi) => {
    let besti = alo, bestj = blo, bestsize = 0, j2len = new Map();
    for (let i = alo; i < ahi; i++) {
      const next = new Map();
      for (const j of b2j.get(a[i]) || []) {
        if (j < blo) continue;
        if (j >= bhi) break;
        const k = (j2len.get(j - 1) || 0) + 1;
        next.set(j, k);
        if (k > bestsize) { besti = i - k + 1; bestj = j - k + 1; bestsize = k; }
      }
      j2len = next;
    }
    return [besti, bestj, bestsize];
  };
  const queue = [[0, a.length, 0, b.length]], blocks = [];
  while (queue.length) {
    const [alo, ahi, blo, bhi] = queue.pop();
    const [i, j, k] = longest(alo, ahi, blo, bhi);
    if (k) {
      blocks.push([i, j, k]);
      if (alo < i && blo < j) queue.push([alo, i, blo, j]);
      if (i + k < ahi && j + k < bhi) queue.push([i + k, ahi, j + k, bhi]);
    }
  }
  blocks.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  const merged = [];
  for (const block of blocks) {
    const last = merged[merged.length - 1];
    if (last && last[0] + last[2] === block[0] && last[1] + last[2] === block[1]) last[2] += block[2];
    else merged.push(block.slice());
  }
  merged.push([a.length, b.length, 0]);
  return merged;
}
// The diff's alignment, in reading order: [index in A, index in B], either null for a word that aligns with none.
// Only what aligns is paired: equal words (the matching blocks), and, when the sentences are variants of one sentence
// (equal words are at least half of each), a word replaced by one word between two equal words ("saw him ." /
// "saw himself ."). Any other stretch of replaced, inserted or deleted words is unpaired: its words of A, then its
// words of B, each on its own row, never paired with an unrelated word. (`allennlp bits diff` also pairs longer
// replaced stretches position by position; its `--pair` compares any two words.)
function align(a, b) {
  const blocks = matchingBlocks(a, b), pairs = [];
  const matched = blocks.reduce((sum, block) => sum + block[2], 0);
  const variants = 2 * matched >= a.length && 2 * matched >= b.length;
  let i = 0, j = 0;
  for (const [ai, bj, size] of blocks) {
    if (variants && i > 0 && j > 0 && size > 0 && ai - i === 1 && bj - j === 1) pairs.push([i, j]); // one word for one, framed
    else {
      for (let x = i; x < ai; x++) pairs.push([x, null]);
      for (let x = j; x < bj; x++) pairs.push([null, x]);
    }
    for (let x = 0; x < size; x++) pairs.push([ai + x, bj + x]);
    i = ai + size; j = bj + size;
  }
  return pairs;
}
function bitLinks(bits) { // differing bit numbers, each a link to its bit's page
  const view = Object.keys(META.views).length ? defaultView() : undefined;
  return Array.from(bits).flatMap((b, r) => [r ? " " : "", el("a", { class: "bitlink", href: link("bits", null, { view, bit: b }), "data-bit": b }, String(b))]);
}
function diffRow(name, S, index, code, diff, status) {
  return el("tr", { class: "row-" + name.toLowerCase() }, el("td", {}, name), el("td", {}, S.w[index]), el("td", {}, S.t ? S.t[index] : ""),
    el("td", { class: "code" }, code), el("td", {}, bitCells(bitsOf(code), diff, "d" + name.toLowerCase())), el("td", { class: "status" }, status));
}
function pairRows(A, B, ia, ib, diff) { // the two rows of an aligned pair, or the one row of an unpaired word
  if (ib === null) return [diffRow("A", A, ia, A.c[ia], diff, el("span", { class: "unpaired" }, "only in A: no word of B aligns with it"))];
  if (ia === null) return [diffRow("B", B, ib, B.c[ib], diff, el("span", { class: "unpaired" }, "only in B: no word of A aligns with it"))];
  const how = A.w[ia] === B.w[ib] ? "the same word" : "a one-word substitution between equal words";
  const result = diff.size ? [diff.size + (diff.size > 1 ? " bits differ: " : " bit differs: "), ...bitLinks(diff)] : ["identical"];
  return [diffRow("A", A, ia, A.c[ia], diff, how), diffRow("B", B, ib, B.c[ib], diff, result)];
}
function diffTable(A, B, pairs, predicted) { // the summary counts every pair; rows for the first MAX_SENTENCE_WORDS pairs
  let differing = 0, identical = 0, aligned = 0, same = 0, onlyA = 0, onlyB = 0;
  const rows = pairs.map(([ia, ib], r) => {
    const diff = new Set();
    if (ia !== null && ib !== null) {
      const x = bitsOf(A.c[ia]), y = bitsOf(B.c[ib]);
      x.forEach((bit, i) => { if (bit !== y[i]) diff.add(i); });
      aligned++; if (!diff.size) identical++; differing += diff.size; if (A.w[ia] === B.w[ib]) same++;
    } else if (ib === null) onlyA++; else onlyB++;
    if (r >= MAX_SENTENCE_WORDS) return null;
    return el("tbody", { class: "diffrow" + (ia === null || ib === null ? " unpaired" : ""), "data-a": ia, "data-b": ib }, pairRows(A, B, ia, ib, diff));
  });
  const hidden = pairs.length - Math.min(pairs.length, MAX_SENTENCE_WORDS), labelled = A.t || B.t;
  const head = el("thead", {}, el("tr", {}, el("th", {}, ""), el("th", {}, "word"), el("th", {}, labelled ? (predicted ? "predicted label" : "gold label") : ""),
    el("th", {}, "code"), el("th", {}, "bits, head 0 first (differing ones coloured)"), el("th", {}, "alignment; differing bits (each a link to its page)")));
  return [el("table", { id: "diff-table" }, head, rows),
    hidden ? el("p", { class: "note", id: "diff-more" }, "… " + fmt(hidden) + " more pairs not shown (the page lays out " + fmt(MAX_SENTENCE_WORDS) + ")") : null,
    el("p", { id: "diff-summary" }, aligned + " aligned pairs (" + same + " the same word, " + (aligned - same) + " substitutions), " + identical +
      " with identical codes, " + differing + " differing bits; " + onlyA + " words only in A, " + onlyB + " only in B")];
}
function alignedSentence(name, S, pairs, side) { // a sentence's words, those that align with none marked
  const unpaired = new Set(pairs.filter((pair) => pair[1 - side] === null).map((pair) => pair[side]));
  return el("p", { class: "diff-sentence", id: "sentence-" + name.toLowerCase() }, name + ": ",
    S.w.flatMap((w, i) => [i ? " " : "", unpaired.has(i) ? el("span", { class: "unaligned", "data-i": i, title: "only in " + name + ": aligned with no word of " + (side ? "A" : "B") }, w) : w]),
    S.cut ? " …" : "");
}
const ALIGNMENT_NOTE = "Words are aligned on their text (difflib's matching blocks): equal words pair, and when equal words are at least half of " +
  "each sentence, so does one word replaced by one word between two equal words (him / himself). Every other word is only in A or only in B " +
  "(underlined above, its own row below), never paired with an unrelated word.";
async function diffView(q) {
  const out = [el("h2", {}, "two sentences, differing bits coloured (A red, B blue)")];
  out.push(el("form", { class: "filters", onsubmit: (event) => { event.preventDefault(); location.hash = link("diff", null, Object.fromEntries(new FormData(event.target).entries())); } },
    el("label", {}, "corpus sentence A", el("input", { name: "a", value: q.get("a") || "0", size: 6, type: "number", min: 0 })),
    el("label", {}, "corpus sentence B", el("input", { name: "b", value: q.get("b") || "1", size: 6, type: "number", min: 0 })),
    el("button", { type: "submit" }, "compare")));
  if (SERVE) {
    out.push(el("form", { class: "filters", id: "typed-diff", onsubmit: (event) => { event.preventDefault(); location.hash = link("diff", null, Object.fromEntries(new FormData(event.target).entries())); } },
      el("label", {}, "or type sentence A", el("input", { name: "ta", value: q.get("ta") || "", size: 40 })),
      el("label", {}, "sentence B", el("input", { name: "tb", value: q.get("tb") || "", size: 40 })),
      el("button", { type: "submit" }, "compare through the model")));
  }
  out.push(el("p", { class: "note", id: "alignment-note" }, ALIGNMENT_NOTE));
  let A, B, predicted = false;
  if (SERVE && q.get("ta") && q.get("tb")) {
    const answer = await post("/api/diff", { a: q.get("ta"), b: q.get("tb") });
    [A, B, predicted] = [{ w: answer.a.words, c: answer.a.codes, t: answer.a.tags }, { w: answer.b.words, c: answer.b.codes, t: answer.b.tags }, true];
  } else {
    const a = Math.min(Math.max(0, parseInt(q.get("a") || "0", 10) || 0), META.sentences - 1);
    const b = Math.min(Math.max(0, parseInt(q.get("b") || String(Math.min(1, META.sentences - 1)), 10) || 0), META.sentences - 1);
    [A, B] = [firstWords(await sentence(a)), firstWords(await sentence(b))];
    for (const [name, S, id] of [["A", A, a], ["B", B, b]]) {
      if (S.cut) out.push(el("p", { class: "note" }, "sentence " + name + " (" + id + ") has " + fmt(S.cut) + " words: the diff compares its first " + fmt(MAX_SENTENCE_WORDS)));
    }
  }
  const pairs = align(A.w, B.w);
  out.push(alignedSentence("A", A, pairs, 0), alignedSentence("B", B, pairs, 1), ...diffTable(A, B, pairs, predicted));
  return out;
}

function firstWords(s) { // a sentence cut to its first MAX_SENTENCE_WORDS words (`cut`: its length, when it was cut)
  if (s.w.length <= MAX_SENTENCE_WORDS) return s;
  const first = (list) => (list ? list.slice(0, MAX_SENTENCE_WORDS) : list);
  return { w: first(s.w), c: first(s.c), t: first(s.t), cut: s.w.length };
}
function treeTooLong(words) { // the note for a tree the tree view does not draw, or null
  if (words <= MAX_TREE_WORDS) return null;
  return el("p", { class: "note", id: "tree-too-long" }, "A tree of " + fmt(words) + " words: the tree view draws trees of at most " +
    fmt(MAX_TREE_WORDS) + " words (its words and codes are below and in the corpus view).");
}

function parseTree(text) { // one-line PTB -> {label, kids} / {word, index}
  const tokens = text.match(/\(|\)|[^\s()]+/g) || [];
  let at = 0, leaf = 0;
  const node = () => {
    at++; // "("
    const label = tokens[at] === "(" ? "" : tokens[at++];
    const kids = [];
    while (at < tokens.length && tokens[at] !== ")") kids.push(tokens[at] === "(" ? node() : { word: tokens[at++], index: leaf++ });
    at++; // ")"
    return { label, kids };
  };
  return node();
}
function drawTree(t, s, sid) {
  if (t.word !== undefined) {
    const hex = s.c[t.index];
    return el("a", { class: "leaf", href: link("word", s.w[t.index], { code: hex }), "data-index": t.index },
      el("span", { class: "w" }, s.w[t.index]), el("span", { class: "code" }, hex), strip(hex));
  }
  return el("div", { class: "node" }, el("span", { class: "label" }, t.label), el("div", { class: "kids" }, t.kids.map((k) => drawTree(k, s, sid))));
}
async function treesView(q) {
  const sid = Math.min(Math.max(0, parseInt(q.get("s") || "0", 10) || 0), META.sentences - 1);
  const s = await sentence(sid);
  const out = [el("h2", {}, "sentence " + sid + (s.tree ? ": its gold tree, a code under each word" : "")),
    pager(sid + 1, META.sentences, (p) => link("trees", null, { s: p - 1 }))];
  if (!s.tree) return out.concat([el("p", { class: "note" }, "This codes corpus holds no trees (a parser's hash-corpus output has them)."), sentenceBox(s, sid)]);
  if (treeTooLong(s.w.length)) return out.concat([treeTooLong(s.w.length), sentenceBox(s, sid)]);
  out.push(el("div", { class: "tree", id: "tree" }, drawTree(parseTree(s.tree), s, sid)));
  return out;
}

async function post(path, body) {
  const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const answer = await response.json();
  if (!response.ok) throw new Error(answer.error || response.statusText);
  return answer;
}
async function typeView(q) {
  const out = [el("h2", {}, "a sentence through " + (SERVE ? SERVE.archive : "the model")),
    el("form", { class: "filters", id: "type-form", onsubmit: (event) => { event.preventDefault(); location.hash = link("type", null, Object.fromEntries(new FormData(event.target).entries())); } },
      el("label", {}, "sentence", el("input", { name: "text", value: q.get("text") || "", size: 60 })), el("button", { type: "submit" }, "encode"))];
  if (!SERVE) return out.concat([el("p", { class: "note" }, "Typing needs the model: run `allennlp bits explore ... --archive model.tar.gz --serve`.")]);
  if (q.get("text")) {
    const answer = await post("/api/encode", { sentences: [q.get("text")] });
    const p = answer.predictions[0];
    if (p.tags) out.push(labelNote(true));
    out.push(el("div", { id: "typed" }, sentenceBox({ w: p.words, c: p.codes, t: p.tags, predicted: true }, "typed")),
      el("p", { class: "note" }, "A word the corpus does not have opens the corpus words nearest to its code."));
    if (p.entities) out.push(el("p", { id: "typed-entities" }, "predicted entities: " + (p.entities.length ? p.entities.map((x) => x.text + " " + x.label).join(" · ") : "none")));
    if (p.tree) out.push(el("p", { class: "note" }, "the tree the model predicts:"), treeTooLong(p.words.length) || el("div", { class: "tree" }, drawTree(parseTree(p.tree), { w: p.words, c: p.codes }, "typed")));
  }
  return out;
}

// ------------------------------------------------------------------------------------------ start
async function render() {
  const route = parseRoute(), mine = ++ROUTES;
  const main = document.getElementById("view");
  document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active", a.dataset.view === route.view));
  const views = { corpus: () => corpusView(route.q), word: () => wordView(route.arg || "", route.q), code: () => codeView(route.arg || ""),
    bits: () => bitsView(route.q), diff: () => diffView(route.q), trees: () => treesView(route.q), type: () => typeView(route.q) };
  try {
    const nodes = await (views[route.view] || views.corpus)();
    if (mine !== ROUTES) return; // a later route is rendering
    main.replaceChildren(...nodes);
    main.dataset.view = views[route.view] ? route.view : "corpus";
  } catch (error) {
    if (mine !== ROUTES) return;
    main.replaceChildren(el("p", { class: "error" }, String(error.message || error)));
  }
  main.dataset.ready = String(++RENDERS);
}
async function start() {
  META = await BitcodeData.load("meta");
  document.getElementById("summary").textContent = META.corpus + " · " + fmt(META.sentences) + " sentences · " + fmt(META.words) +
    " words · K = " + META.num_bits + " · " + fmt(META.distinct_codes) + " distinct codes";
  document.getElementById("nav-trees").hidden = META.task !== "parser";
  if (location.protocol.startsWith("http")) {
    try { const r = await fetch("/api/info"); if (r.ok) SERVE = await r.json(); } catch (error) { SERVE = null; }
  }
  document.getElementById("nav-type").hidden = !SERVE;
  window.addEventListener("hashchange", render);
  await render();
}
start().catch((error) => {
  const main = document.getElementById("view");
  main.replaceChildren(el("p", { class: "error" }, "cannot open the explorer's data: " + (error.message || error)));
  main.dataset.ready = String(++RENDERS);
});
