package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

// TestLoadedOnFirstRequest: a relay's handler reads and compresses the
// page's files when the first request comes, not when the relay starts
// (the desktop window starts one each time it opens, and most never serve
// the page), and only once.
func TestLoadedOnFirstRequest(t *testing.T) {
	s := newSite(static)
	h := s.handler()
	if n := s.loads.Load(); n != 0 {
		t.Fatalf("the page's files were compressed %d times before any request", n)
	}
	for i := range 2 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://relay.test:7420/", nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "<html") {
			t.Fatalf("GET /: %d %.80q", rec.Code, rec.Body.String())
		}
		if n := s.loads.Load(); n != 1 {
			t.Fatalf("after request %d the files were read and compressed %d times, want once", i+1, n)
		}
	}
}

// TestMissingPage: a build whose page cannot be read says so on every
// request, where the relay still starts.
func TestMissingPage(t *testing.T) {
	h := newSite(fstest.MapFS{}).handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://relay.test:7420/", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "the web client is missing from this build") {
		t.Fatalf("GET / without the page: %d %q", rec.Code, rec.Body.String())
	}
}
