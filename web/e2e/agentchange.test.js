// The web client's fold notes where a conversation's agent changed, as
// conversation.State does for the window and the terminal
// (conversation/agent_test.go): each copilot:user_message names the agent
// that ran its turn. The fold touches no DOM, so Node runs it as it is.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Conversation } from '../static/js/conversation.js';

describe('agent change note', () => {
  it('notes a change of agent before the prompt, and nothing else', () => {
    const c = new Conversation('c');
    let seq = 0;
    const prompt = (id, agent) => {
      const d = { conversationId: 'c', seq: ++seq, messageId: id, content: `prompt ${id}`, mode: 'act' };
      if (agent !== undefined) d.agent = agent;
      c.apply('copilot:user_message', d);
      c.apply('copilot:idle', { conversationId: 'c', seq: ++seq, status: 'completed' });
    };
    const notes = () => c.rows.flatMap((r, i) => {
      if (r.kind !== 'note') return [];
      assert.equal(c.rows[i + 1]?.kind, 'user', `note ${r.text} is not just before a prompt`);
      return [r.text];
    });

    prompt('1', 'Copilot CLI');
    prompt('2', 'Copilot CLI');
    assert.deepEqual(notes(), []);
    assert.equal(c.agent, 'Copilot CLI');
    prompt('3'); // stored before relays named the agent
    prompt('4', 'OpenCode (ACP)');
    prompt('5', 'OpenCode (ACP)');
    prompt('6', 'Copilot CLI');
    assert.deepEqual(notes(), [
      'The agent changed from Copilot CLI to OpenCode (ACP).',
      'The agent changed from OpenCode (ACP) to Copilot CLI.',
    ]);
    assert.equal(c.agent, 'Copilot CLI');

    // The relay's history started over: the first prompt replayed has
    // nothing to differ from.
    c.resetCopy();
    prompt('7', 'OpenCode (ACP)');
    assert.deepEqual(notes(), []);
    assert.equal(c.agent, 'OpenCode (ACP)');
  });
});
