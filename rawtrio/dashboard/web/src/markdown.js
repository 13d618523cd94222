// Markdown → sanitized HTML for model text. Model text is untrusted: everything marked
// produces passes DOMPurify before it reaches the page, and links open in a new tab with no
// referrer and no opener. Code blocks are highlighted with highlight.js (a fixed set of
// languages, so the bundle stays small); unknown languages render as plain escaped text.
import { Marked } from "marked";
import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import ini from "highlight.js/lib/languages/ini";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

const languages = {
  bash, c, cpp, css, diff, go, ini, java, javascript, json, markdown, python, rust, shell,
  sql, typescript, xml, yaml,
};
for (const [name, lang] of Object.entries(languages)) hljs.registerLanguage(name, lang);

function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/** Highlighted HTML of `code` (escaped; safe to insert), by language name or alias. */
export function highlight(code, lang) {
  const name = (lang || "").trim().split(/\s+/)[0].toLowerCase();
  if (name && hljs.getLanguage(name)) {
    return hljs.highlight(code, { language: name, ignoreIllegals: true }).value;
  }
  return escapeHtml(code);
}

const marked = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    code({ text, lang }) {
      const name = (lang || "").trim().split(/\s+/)[0];
      const cls = name ? ` class="hljs language-${escapeHtml(name)}"` : ' class="hljs"';
      return `<pre><code${cls}>${highlight(text, name)}</code></pre>\n`;
    },
  },
});

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

const PURIFY = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "img", "iframe"],
  FORBID_ATTR: ["style"],
};

/**
 * Sanitized HTML of a (possibly still streaming) Markdown text. An unclosed code fence
 * renders as a code block up to the end, so a block being streamed is highlighted as it grows.
 */
export function renderMarkdown(text) {
  return DOMPurify.sanitize(marked.parse(text || "", { async: false }), PURIFY);
}
