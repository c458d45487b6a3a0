// Command pilotdesk is a desktop window for AI coding agents, the GitHub
// Copilot CLI first. See cli/ for the commands.
package main

import (
	"os"

	"github.com/pilotdesk/pilotdesk/cli"
	"github.com/pilotdesk/pilotdesk/internal/fynelocale"
)

func main() {
	fynelocale.Restore()
	os.Exit(cli.Main(os.Args[1:]))
}
