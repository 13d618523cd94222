// The page's in-page dialogs (never window.confirm: it blocks the page, cannot show the
// server's answer and is not styled): a native <dialog> opened modal, so focus stays in it,
// Esc cancels it and the rest of the page is inert while it is open.
import { Component, createRef } from "preact";
import { html } from "./html.js";

/**
 * A modal dialog. `onDismiss` is called when the user leaves it (Esc, the cancel button);
 * the parent then stops rendering it. `labelId` names the element that titles it.
 */
class Modal extends Component {
  constructor(props) {
    super(props);
    this.ref = createRef();
  }
  componentDidMount() {
    const el = this.ref.current;
    if (el && !el.open) el.showModal();
  }
  componentDidUpdate() {
    const el = this.ref.current;
    if (!el) return;
    // The browser may close a modal itself (a second Esc while busy): the page still
    // shows it, so it opens again rather than leave Delete or Compact dead.
    if (!el.open) el.showModal();
    // A button that had the focus was disabled while busy: the focus goes back to the
    // first button that can take it (Close, after a refusal).
    if (!el.contains(document.activeElement)) {
      const button = el.querySelector("button:not([disabled])");
      if (button) button.focus();
    }
  }
  componentWillUnmount() {
    const el = this.ref.current;
    if (el && el.open) el.close();
  }
  render({ labelId, role, part, children, onDismiss, busy }) {
    return html`
      <dialog ref=${this.ref} class="dialog" role=${role || "dialog"} aria-labelledby=${labelId}
              aria-modal="true" data-part=${part}
              onCancel=${(e) => { e.preventDefault(); if (!busy) onDismiss(); }}>
        ${children}
      </dialog>`;
  }
}

/**
 * "Delete this session?" — `target` is `{id, title, busy, error}`; `error` is the server's
 * refusal (a turn runs, another front end is on it), shown in the dialog, which stays open
 * so the user can try again once the reason is gone, or dismiss it.
 */
export function DeleteDialog({ target, onConfirm, onDismiss }) {
  const name = target.title || "untitled";
  return html`
    <${Modal} labelId="delete-title" role="alertdialog" part="delete-dialog" busy=${target.busy}
              onDismiss=${onDismiss}>
      <h3 id="delete-title">Delete “${name}”?</h3>
      <p>The session, its whole history and its checkpoints are deleted from this machine.
         This cannot be undone.</p>
      ${target.error ? html`<div class="error-line" role="alert" data-part="dialog-error">
        Not deleted: ${target.error}</div>` : null}
      <div class="dialog-buttons">
        <button type="button" autofocus disabled=${target.busy} onClick=${onDismiss}>
          ${target.error ? "Close" : "Cancel"}</button>
        <button type="button" class="danger" disabled=${target.busy} onClick=${onConfirm}>
          ${target.busy ? "Deleting…" : "Delete"}</button>
      </div>
    <//>`;
}

/**
 * "Compact the context" with an optional focus for the summary. `form` is
 * `{focus, busy, error}`; the text being typed lives in the parent's state (`onFocusText`),
 * so a redraw of the page (an event, the list's refresh) never resets it.
 */
export function CompactDialog({ form, onFocusText, onConfirm, onDismiss }) {
  const submit = (e) => {
    e.preventDefault();
    if (!form.busy) onConfirm(form.focus);
  };
  return html`
    <${Modal} labelId="compact-title" part="compact-dialog" busy=${form.busy} onDismiss=${onDismiss}>
      <form method="dialog" onSubmit=${submit}>
        <h3 id="compact-title">Compact the context</h3>
        <p>Older turns are replaced by a summary in what the model is sent from now on (the
           task and the last turns stay as they are). The transcript here keeps everything.</p>
        <label class="field">
          <span>Focus of the summary (optional)</span>
          <input name="focus" type="text" autocomplete="off" autofocus
                 placeholder="e.g. the API decisions and the open bugs"
                 value=${form.focus} onInput=${(e) => onFocusText(e.target.value)} />
        </label>
        ${form.error ? html`<div class="error-line" role="alert" data-part="dialog-error">
          Not compacted: ${form.error}</div>` : null}
        <div class="dialog-buttons">
          <button type="button" disabled=${form.busy} onClick=${onDismiss}>
            ${form.error ? "Close" : "Cancel"}</button>
          <button type="submit" class="primary" disabled=${form.busy}>
            ${form.busy ? "Starting…" : "Compact"}</button>
        </div>
      </form>
    <//>`;
}
