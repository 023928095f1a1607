package web

import (
	"compress/gzip"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// gzipWriters are reused: a gzip.Writer holds some hundred kilobytes.
var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// compressed is the response of one request: gzip-compressed when the
// client accepts gzip and the response is HTML or CSS, as it is
// otherwise. Close ends the compressed stream.
type compressed struct {
	http.ResponseWriter
	accept  bool
	decided bool
	zw      *gzip.Writer
}

// compress returns w for r: it always says the response varies with
// Accept-Encoding. A range request or a HEAD is never compressed.
func compress(w http.ResponseWriter, r *http.Request) *compressed {
	w.Header().Add("Vary", "Accept-Encoding")
	return &compressed{ResponseWriter: w,
		accept: r.Method != http.MethodHead && r.Header.Get("Range") == "" && acceptsGzip(r.Header.Values("Accept-Encoding"))}
}

func (c *compressed) WriteHeader(code int) {
	if c.decided {
		c.ResponseWriter.WriteHeader(code)
		return
	}
	c.decided = true
	h := c.Header()
	if c.accept && code != http.StatusNoContent && code != http.StatusNotModified && code >= http.StatusOK &&
		h.Get("Content-Encoding") == "" && compressible(h.Get("Content-Type")) {
		h.Del("Content-Length")
		h.Set("Content-Encoding", "gzip")
		c.zw = gzipWriters.Get().(*gzip.Writer)
		c.zw.Reset(c.ResponseWriter)
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *compressed) Write(p []byte) (int, error) {
	if !c.decided {
		if c.Header().Get("Content-Type") == "" {
			c.Header().Set("Content-Type", http.DetectContentType(p))
		}
		c.WriteHeader(http.StatusOK)
	}
	if c.zw != nil {
		return c.zw.Write(p)
	}
	return c.ResponseWriter.Write(p)
}

// Close ends the compressed stream, if there is one.
func (c *compressed) Close() error {
	if c.zw == nil {
		return nil
	}
	err := c.zw.Close()
	c.zw.Reset(nil)
	gzipWriters.Put(c.zw)
	c.zw = nil
	return err
}

// compressible reports whether a response of contentType is worth
// compressing: the pages and their style sheet.
func compressible(contentType string) bool {
	t, _, err := mime.ParseMediaType(contentType)
	return err == nil && (t == "text/html" || t == "text/css")
}

// acceptsGzip reports whether the Accept-Encoding values accept gzip: it
// is named with a q above 0.
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(part, ";")
			if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
				continue
			}
			q := 1.0
			for p := range strings.SplitSeq(params, ";") {
				if k, val, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
						q = f
					} else {
						q = 0
					}
				}
			}
			return q > 0
		}
	}
	return false
}
