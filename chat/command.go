package chat

import (
	"encoding/json"
	"strings"

	"github.com/pilotdesk/pilotdesk/conversation"
)

// commandLines prints, under a tool's line, the whole command of a shell
// call that has more than one line: its summary shows the first line and
// "+N lines", and what the others run must be seen too (issue #33: a
// second line piping a download into sh ran behind an innocent "ls -la").
func (r *repl) commandLines(tool conversation.Row) {
	w := conversation.DescribeTool(tool.Title, json.RawMessage(tool.Args), "")
	cmd := strings.TrimSpace(w.Command)
	if w.Kind != conversation.ToolShell || !strings.Contains(cmd, "\n") {
		return
	}
	for i, line := range strings.Split(cmd, "\n") {
		prefix := "    "
		if i == 0 {
			prefix = "  $ "
		}
		r.note(styleDim, prefix+sanitize(line))
	}
}
