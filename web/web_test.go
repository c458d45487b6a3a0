package web_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/web"
)

func get(t *testing.T, path string, header http.Header) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://relay.test:7420"+path, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	web.Handler().ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPage(t *testing.T) {
	res := get(t, "/", nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /: %d", res.StatusCode)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	csp := res.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'",
		"connect-src 'self' ws://relay.test:7420 wss://relay.test:7420", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("Content-Security-Policy allows something unsafe: %q", csp)
	}
	for h, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"} {
		if got := res.Header.Get(h); got != want {
			t.Errorf("%s: %q, want %q", h, got, want)
		}
	}
	if b := body(t, res); !strings.Contains(b, `<script type="module" src="js/main.js"></script>`) {
		t.Errorf("the page does not load js/main.js:\n%s", b)
	}
}

// TestPolicyHost: a Host header that could smuggle something into the
// policy is left out of it.
func TestPolicyHost(t *testing.T) {
	req := httptest.NewRequest(http.MethodGet, "http://relay.test/", nil)
	req.Host = "evil.test; script-src *"
	rec := httptest.NewRecorder()
	web.Handler().ServeHTTP(rec, req)
	if csp := rec.Result().Header.Get("Content-Security-Policy"); strings.Contains(csp, "evil") || !strings.Contains(csp, "connect-src 'self';") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
}

// TestEveryFileIsServed: each file the page and its modules name is served
// with its type, and nothing outside the page is.
func TestEveryFileIsServed(t *testing.T) {
	refs := map[string]bool{"/": true}
	page := body(t, get(t, "/", nil))
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"#:]+)"`).FindAllStringSubmatch(page, -1) {
		refs["/"+m[1]] = true
	}
	err := fs.WalkDir(os.DirFS("static/js"), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		refs["/js/"+p] = true
		src, err := os.ReadFile(filepath.Join("static/js", p))
		if err != nil {
			return err
		}
		for _, m := range regexp.MustCompile(`from '\./([a-z]+\.js)'`).FindAllStringSubmatch(string(src), -1) {
			if _, err := os.Stat(filepath.Join("static/js", m[1])); err != nil {
				t.Errorf("js/%s imports ./%s, which does not exist", p, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", "": "text/html; charset=utf-8",
		".png": "image/png", ".webmanifest": "application/manifest+json"}
	for p := range refs {
		res := get(t, p, nil)
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", p, res.StatusCode)
			continue
		}
		if got, want := res.Header.Get("Content-Type"), types[filepath.Ext(p)]; got != want {
			t.Errorf("GET %s: Content-Type %q, want %q", p, got, want)
		}
	}
	for _, p := range []string{"/index.html", "/static/index.html", "/js/", "/js/nope.js", "/web.go", "/../web.go", "/ws2"} {
		if res := get(t, p, nil); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, res.StatusCode)
		}
	}
}

func TestGzipAndETag(t *testing.T) {
	plain := get(t, "/js/app.js", nil)
	want := body(t, plain)
	res := get(t, "/js/app.js", http.Header{"Accept-Encoding": {"br, gzip"}})
	if res.Header.Get("Content-Encoding") != "gzip" || res.Header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("no gzip: %v", res.Header)
	}
	zr, err := gzip.NewReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, []byte(want)) {
		t.Error("the gzipped file differs from the file")
	}
	if res := get(t, "/js/app.js", http.Header{"Accept-Encoding": {"gzip;q=0"}}); res.Header.Get("Content-Encoding") != "" {
		t.Error("gzip sent to a client that refused it")
	}
	etag := plain.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	if res := get(t, "/js/app.js", http.Header{"If-None-Match": {etag}}); res.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %d, want 304", res.StatusCode)
	}
}

// TestSize: the page stays small enough for a phone on a poor network.
func TestSize(t *testing.T) {
	n, err := web.Size()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the page's files: %d bytes gzipped", n)
	if n > 150<<10 {
		t.Errorf("the page's files are %d bytes gzipped, over the 150 KB budget", n)
	}
}

// TestNoInlineCodeOrHTMLParsing: the page runs under a policy without
// 'unsafe-inline' or 'unsafe-eval', and renders what agents and users wrote
// as text: no inline script or handler, no eval, no HTML parsing.
func TestNoInlineCodeOrHTMLParsing(t *testing.T) {
	page, err := os.ReadFile("static/index.html")
	if err != nil {
		t.Fatal(err)
	}
	scripts := regexp.MustCompile(`(?s)<script([^>]*)>(.*?)</script>`).FindAllSubmatch(page, -1)
	if len(scripts) == 0 {
		t.Error("index.html loads no script")
	}
	for _, m := range scripts {
		if !bytes.Contains(m[1], []byte(`src="`)) || len(bytes.TrimSpace(m[2])) > 0 {
			t.Errorf("index.html has an inline script: %s", m[0])
		}
	}
	if m := regexp.MustCompile(`\son[a-z]+=|\sstyle=`).Find(page); m != nil {
		t.Errorf("index.html has an inline handler or style: %q", m)
	}
	banned := regexp.MustCompile(`\beval\(|new Function|innerHTML|outerHTML|insertAdjacentHTML|document\.write|setTimeout\(['"]|setInterval\(['"]|DOMParser|createContextualFragment`)
	files, _ := filepath.Glob("static/js/*.js")
	if len(files) == 0 {
		t.Fatal("no scripts")
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			if m := banned.FindString(line); m != "" {
				t.Errorf("%s:%d uses %s", f, i+1, m)
			}
		}
	}
}

// TestServiceWorkerCachesEveryScript: sw.js names each of the page's
// scripts, so that a start from its cache has all of them.
func TestServiceWorkerCachesEveryScript(t *testing.T) {
	sw, err := os.ReadFile("static/sw.js")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("static/js/*.js")
	if len(files) == 0 {
		t.Fatal("no scripts")
	}
	for _, f := range files {
		if name := "'js/" + filepath.Base(f) + "'"; !bytes.Contains(sw, []byte(name)) {
			t.Errorf("sw.js does not cache %s", name)
		}
	}
}
