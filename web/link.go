package web

import "net/url"

// Link is the address that opens the web client on the relay at relayURL
// (ws://HOST:PORT/ws, or wss://) with token: the token goes in the
// fragment, which browsers never send to a server, and the page reads it
// from there. A relayURL that does not parse is returned as it is. The
// window's Connect a device… dialog and pilotdesk token create print it.
func Link(relayURL, token string) string {
	u, err := url.Parse(relayURL)
	if err != nil {
		return relayURL
	}
	scheme := "http"
	if u.Scheme == "wss" || u.Scheme == "https" {
		scheme = "https"
	}
	return scheme + "://" + u.Host + "/#token=" + url.QueryEscape(token)
}

// SetupLink is the address of a relay's setup page (setupURL,
// http://HOST:PORT/) with token in its fragment: the page helps a phone
// trust the relay's local certificate authority, then carries the token
// on to the web client over https (docs/devices.md).
func SetupLink(setupURL, token string) string {
	return setupURL + "#token=" + url.QueryEscape(token)
}
