// The web client's markdown in Node, on a fake DOM (fakedom.js): hostile
// text renders in time linear in its length. Issue #33 measured the old
// parser at 167 s for 128 KB of "[" (265 / 1,098 / 2,811 / 7,694 ms for
// 8 / 16 / 32 / 64 KB). Times are CPU time of this process (the machine
// may be busy with other work), the best of a few runs.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { install } from './fakedom.js';

install();
const { renderMarkdown } = await import('../static/js/markdown.js');

const PATTERNS = ['[', '*a ', 'http://[', '*.go ', '<http://a', '[a](x', '**a ', '_a ', '`a ``', '~~a '];
const SIZES_KB = [16, 32, 64, 128];

// cpuMs is the least CPU time, in ms, of rendering text a few times.
function cpuMs(text) {
  let best = Infinity;
  for (let r = 0; r < 7; r++) {
    const start = process.cpuUsage();
    renderMarkdown(text);
    const d = process.cpuUsage(start);
    best = Math.min(best, (d.user + d.system) / 1000);
  }
  return best;
}

const html = (md) => renderMarkdown(md).html;

describe('markdown', () => {
  for (const unit of PATTERNS) {
    it(`renders ${JSON.stringify(unit)} repeated to 128 KB in linear time, under 100 ms`, () => {
      // A busy machine can slow one measurement (a collection, another
      // process): three tries, of which one must meet both bounds. A
      // quadratic parser fails every time (16 times as long for 4 times
      // the text, seconds at 128 KB).
      let why = '';
      for (let attempt = 0; attempt < 3; attempt++) {
        const times = SIZES_KB.map((kb) => cpuMs(unit.repeat(Math.ceil((kb * 1024) / unit.length))));
        const shown = SIZES_KB.map((kb, k) => `${kb} KB ${times[k].toFixed(1)} ms`).join(', ');
        // Linear: 4 times the time for 4 times the text; quadratic: 16.
        // Times under 2 ms are mostly the clock's grain: counted as 2.
        const ratio = times[3] / Math.max(times[1], 2);
        if (ratio < 10 && times[3] < 100) return;
        why = `128 KB took ${times[3].toFixed(1)} ms, ${ratio.toFixed(1)} times as long as 32 KB (${shown})`;
      }
      assert.fail(why);
    });
  }

  it('still renders what agents write', () => {
    assert.equal(html('a [link](https://example.com/a_(b)) and *em* **strong** `co*de` ~~del~~'),
      '<p>a <a>link</a> and <em>em</em> <strong>strong</strong> <code>co*de</code> <del>del</del></p>');
    assert.equal(html('see http://example.com/x. and <https://example.org>'),
      '<p>see <a>http://example.com/x</a>. and <a>https://example.org</a></p>');
    assert.equal(html('[not a link](javascript:alert(1)) [t](https://a.example "title")'),
      '<p>not a link <a>t</a></p>');
    assert.equal(html('***both*** and snake_case_name and [a [nested] b](https://n.example)'),
      '<p><strong><em>both</em></strong> and snake_case_name and <a>a [nested] b</a></p>');
    assert.equal(html('[unclosed and *unclosed and `unclosed'), '<p>[unclosed and *unclosed and `unclosed</p>');
  });
});
