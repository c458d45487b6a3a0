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
