import { render } from "preact";
import { html } from "./html.js";
import { takeTokenFromLocation } from "./api.js";
import { App } from "./app.js";
import "./app.css";

const initialSession = takeTokenFromLocation().session;
render(html`<${App} initialSession=${initialSession} />`, document.getElementById("app"));
