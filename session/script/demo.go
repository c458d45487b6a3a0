package script

import "github.com/pilotdesk/pilotdesk/assets"

// DemoName names the built-in demo in messages.
const DemoName = "built-in demo"

// Demo parses the built-in demo script (assets/demo.json), the scenario the
// app plays when no Copilot CLI is available and no --script is given.
func Demo() (*Script, error) { return Parse(DemoName, assets.DemoScript) }
