// Browser preferences: the page's own, in localStorage, never sent to the server and never
// written to rawtrio's config file. Only these keys, only these values: no token, no secret.
const KEY = "rawtrio.dashboard.prefs";
const DEFAULTS = { theme: "auto", expandTools: false, enterSends: true, lastSession: null };

export function loadPrefs() {
  try {
    const raw = JSON.parse(localStorage.getItem(KEY) || "{}");
    const out = { ...DEFAULTS };
    if (["auto", "light", "dark"].includes(raw.theme)) out.theme = raw.theme;
    if (typeof raw.expandTools === "boolean") out.expandTools = raw.expandTools;
    if (typeof raw.enterSends === "boolean") out.enterSends = raw.enterSends;
    if (typeof raw.lastSession === "string" && /^[A-Za-z0-9_-]{1,100}$/.test(raw.lastSession)) {
      out.lastSession = raw.lastSession;
    }
    return out;
  } catch {
    return { ...DEFAULTS };
  }
}

export function savePrefs(prefs) {
  const { theme, expandTools, enterSends, lastSession } = prefs;
  try {
    localStorage.setItem(KEY, JSON.stringify({ theme, expandTools, enterSends, lastSession }));
  } catch {
    // storage full or disabled: preferences just don't persist
  }
}
