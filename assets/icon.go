package assets

import _ "embed"

// Icon is the app icon (256 px PNG rendered from icon.svg with
// `rsvg-convert -w 256 -h 256 icon.svg -o icon.png`).
//
//go:embed icon.png
var Icon []byte
