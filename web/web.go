// Package web is the relay's web client: the page every relay serves at
// GET / so that a phone, or any browser, can follow and answer
// conversations (docs/protocol.md, The web client). It is plain HTML, CSS and JavaScript modules embedded in the
// binary: no build step, and nothing is fetched from anywhere but the relay.
//
// The page learns the token from the URL's fragment (/#token=…), which a
// browser never sends to a server, so GET / itself needs no token: the page
// is the same for everyone and holds no secret.
package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
)

//go:embed static
var static embed.FS

// file is one embedded file, ready to serve.
type file struct {
	body  []byte
	gz    []byte // gzip of body; nil when it does not pay
	ctype string
	etag  string
}

// site is the page's files, by URL path ("/" for index.html), read and
// compressed by the first request that needs them (load).
type site struct {
	files func() (map[string]*file, error)
	loads atomic.Int32 // how often load ran: what TestLoadedOnFirstRequest checks
}

func newSite(fsys fs.FS) *site {
	s := &site{}
	s.files = sync.OnceValues(func() (map[string]*file, error) {
		s.loads.Add(1)
		return load(fsys)
	})
	return s
}

// page is the web client every relay of the process serves.
var page = newSite(static)

// contentTypes are the types of the files the page is made of; a file of
// another kind is not served, so nothing unexpected leaves the binary.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".json": "application/json",
	".png":  "image/png",
	// The web app manifest, which makes the page installable.
	".webmanifest": "application/manifest+json",
}

// load reads and compresses the embedded files, once per process.
// Compressing here, not per request, keeps a phone's first load small (the
// issue asks for under 150 KB compressed) at no cost per request. It runs
// at the first request, not when a relay starts: the desktop window starts
// its embedded relay every time it opens, and most of its runs never serve
// the page, while the compression costs about 55 ms of CPU and 25 MB of
// garbage (gzip's best level) right after the window is mapped, and keeps
// 430 KB (docs/performance.md).
func load(fsys fs.FS) (map[string]*file, error) {
	files := map[string]*file{}
	err := fs.WalkDir(fsys, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ctype, ok := contentTypes[path.Ext(p)]
		if !ok {
			return nil
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return fmt.Errorf("web: read %s: %w", p, err)
		}
		sum := sha256.Sum256(body)
		f := &file{body: body, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if _, err := zw.Write(body); err != nil {
			return fmt.Errorf("web: compress %s: %w", p, err)
		}
		if err := zw.Close(); err != nil {
			return fmt.Errorf("web: compress %s: %w", p, err)
		}
		if buf.Len() < len(body) {
			f.gz = buf.Bytes()
		}
		urlPath := strings.TrimPrefix(p, "static")
		if urlPath == "/index.html" {
			urlPath = "/"
		}
		files[urlPath] = f
		return nil
	})
	return files, err
}

// Handler serves the web client: GET / is the page and the files it names
// are beside it; any other path is 404. The relay mounts it at GET /, below
// /ws and /healthz.
func Handler() http.Handler { return page.handler() }

func (s *site) handler() http.Handler { return http.HandlerFunc(s.serve) }

// Size returns the number of bytes a browser that accepts gzip transfers to
// load every file of the page.
func Size() (int, error) {
	files, err := page.files()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range files {
		if f.gz != nil {
			n += len(f.gz)
		} else {
			n += len(f.body)
		}
	}
	return n, nil
}

func (s *site) serve(w http.ResponseWriter, req *http.Request) {
	files, err := s.files()
	if err != nil {
		http.Error(w, "the web client is missing from this build: "+err.Error(), http.StatusInternalServerError)
		return
	}
	f, ok := files[req.URL.Path]
	if !ok {
		http.NotFound(w, req)
		return
	}
	h := w.Header()
	securityHeaders(h, req.Host)
	h.Set("Content-Type", f.ctype)
	h.Set("ETag", f.etag)
	h.Set("Vary", "Accept-Encoding")
	// Files are named, not versioned: a browser revalidates each with its
	// ETag (a 304 costs a few bytes), so a relay that was upgraded serves
	// its own page and scripts at once.
	h.Set("Cache-Control", "no-cache")
	if match := req.Header.Get("If-None-Match"); match != "" && strings.Contains(match, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := f.body
	if f.gz != nil && acceptsGzip(req) {
		h.Set("Content-Encoding", "gzip")
		body = f.gz
	}
	h.Set("Content-Length", fmt.Sprint(len(body)))
	if req.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

func acceptsGzip(req *http.Request) bool {
	for part := range strings.SplitSeq(req.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") && !strings.Contains(strings.ReplaceAll(params, " ", ""), "q=0") {
			return true
		}
	}
	return false
}

// hostPattern is what a Host header may hold to be named in the policy: a
// name or address and a port. Anything else (it cannot happen through
// net/http, which checks the header) falls back to 'self' alone.
var hostPattern = regexp.MustCompile(`^[A-Za-z0-9.\-]+(:[0-9]+)?$|^\[[0-9A-Fa-f:.]+\](:[0-9]+)?$`)

// securityHeaders sets the policy every response of the page carries. The
// page runs only its own scripts (no inline script, no eval), loads nothing
// from elsewhere, and connects only to the relay that served it. 'self'
// covers ws: and wss: in current browsers; the relay's host is named as
// well for those that predate that rule.
func securityHeaders(h http.Header, host string) {
	connect := "'self'"
	if hostPattern.MatchString(host) {
		connect += " ws://" + host + " wss://" + host
	}
	h.Set("Content-Security-Policy", strings.Join([]string{
		"default-src 'none'",
		"script-src 'self'",
		"style-src 'self'",
		"img-src 'self'",
		"connect-src " + connect,
		"manifest-src 'self'",
		"base-uri 'none'",
		"form-action 'none'",
		"frame-ancestors 'none'",
	}, "; "))
	h.Set("X-Content-Type-Options", "nosniff")
	// The token lives in the fragment, which never goes into a Referer;
	// sending no Referer at all keeps even the relay's address private
	// when a link in a reply is opened.
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}
