// main.js: starts the page. Everything else is in app.js and the views it
// wires together.

import { App } from './app.js';

const app = new App();
app.start();
