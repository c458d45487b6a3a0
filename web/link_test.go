package web

import "testing"

func TestLink(t *testing.T) {
	for _, tc := range []struct{ relay, token, want string }{
		{"ws://127.0.0.1:7420/ws", "abc", "http://127.0.0.1:7420/#token=abc"},
		{"wss://desk.lan:7420/ws", "a+b/c=", "https://desk.lan:7420/#token=a%2Bb%2Fc%3D"},
		{"://bad", "abc", "://bad"},
	} {
		if got := Link(tc.relay, tc.token); got != tc.want {
			t.Errorf("Link(%q, %q) = %q, want %q", tc.relay, tc.token, got, tc.want)
		}
	}
}
