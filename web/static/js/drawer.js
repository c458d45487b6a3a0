// drawer.js: the conversation list's drawer. On a narrow screen it slides
// over the page and has its own entry in the history (#/), so that back
// closes it; on a wide one (app.css's breakpoint) it is a sidebar, always
// there.

import { $ } from './dom.js';

// wide is when the drawer is a sidebar (app.css's breakpoint).
const wide = window.matchMedia('(min-width: 860px)');

export class Drawer {
  constructor() {
    this.listPushed = false; // the drawer's #/ entry was pushed by this page
    $('menu').addEventListener('click', () => this.toggle(undefined, { push: true }));
    $('scrim').addEventListener('click', () => this.toggle(false));
    $('drawer').inert = !wide.matches;
    wide.addEventListener('change', () => this.toggle(false, { history: 'none' }));
  }

  /**
   * toggle opens or closes the list. push: an opening the user
   * asked for gets its own entry (#/), so that back closes it; history
   * 'none': the address changed already (the back button).
   */
  toggle(open, { push = false, history: how = '' } = {}) {
    const app = $('app');
    const was = app.classList.contains('drawer-open');
    const on = open === undefined ? !was : open;
    app.classList.toggle('drawer-open', on);
    $('menu').setAttribute('aria-expanded', String(on));
    $('scrim').hidden = !on;
    // Closed, the drawer is out of the Tab order and of what a screen
    // reader reads (on a wide screen it is a sidebar, always there).
    $('drawer').inert = !on && !wide.matches;
    if (how === 'none' || on === was) return;
    if (on && push) {
      history.pushState(null, '', '#/');
      this.listPushed = true;
    } else if (!on && this.listPushed && location.hash === '#/') {
      this.listPushed = false;
      history.back();
    }
  }
}
